#!/usr/bin/env node
// The `gateway` command. The TypeScript sources are compiled to dist/ by `npm install` (prepare).
import('../dist/src/cli.js').then((m) => m.main(process.argv)).catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/src/cli.js')) {
    console.error('gateway: dist/ is missing; run `npm install` (or `npm run build`) first.');
  } else {
    console.error(`gateway: ${err && err.message ? err.message : err}`);
  }
  process.exit(1);
});
