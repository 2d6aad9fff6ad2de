#!/usr/bin/env -S node --max-semi-space-size=8
// The `gateway` command. The TypeScript sources are compiled to dist/ by `npm install` (prepare).
// --max-semi-space-size=8: a gateway allocates ~80 KB of short-lived objects per request. V8's
// default young generation (16 MB) lets RSS float ~40 MB higher under load; 4 MB scavenged so
// often that the main thread spent ~10 % more CPU per request; 8 MB measured the CPU of 16,
// with no RSS difference from 4 that the bench resolves (docs/benchmarks.md). `npm start` and
// the bench pass the same flag; `node bin/gateway.js` alone does not.

// The AWS SDK (S3 storage, Bedrock credentials) prints a NodeVersionSupportWarning at every
// start on Node < 22 though Node 20 is supported here (package.json engines); its own switch
// turns that notice off. An operator who sets the variable (to false) sees it again.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import('../dist/cli/index.js').then((m) => m.main(process.argv)).catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/index.js')) {
    console.error('gateway: dist/ is missing; run `npm install` (or `npm run build`) first.');
  } else {
    console.error(`gateway: ${err?.message ? err.message : err}`);
  }
  process.exit(1);
});
