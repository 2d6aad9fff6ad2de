#!/usr/bin/env -S node --max-semi-space-size=4
// The `gateway` command. The TypeScript sources are compiled to dist/ by `npm install` (prepare).
// --max-semi-space-size=4: a gateway allocates many short-lived objects per request, and V8's
// default young generation lets RSS float ~40 MB higher under load for no throughput gain
// (npm run bench). `npm start` passes the same flag; `node bin/gateway.js` alone does not.

import('../dist/cli/index.js').then((m) => m.main(process.argv)).catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/index.js')) {
    console.error('gateway: dist/ is missing; run `npm install` (or `npm run build`) first.');
  } else {
    console.error(`gateway: ${err && err.message ? err.message : err}`);
  }
  process.exit(1);
});
