#!/usr/bin/env node
/*
 * `npm run gen:api`: writes the management API's TypeScript types from its route schemas —
 * src/management/api-types.ts (what handlers receive) and console/src/api-types.ts (what
 * the console sends and gets back). The gateway's TypeScript is loaded through vite (no
 * build needed); the document is built on a fastify app that never listens.
 * `--check` writes nothing and exits 1 when either file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const API_TYPES_FILES = { server: 'src/management/api-types.ts', console: 'console/src/api-types.ts' };

const vite = await createServer({
  configFile: false, root, logLevel: 'error', appType: 'custom',
  server: { middlewareMode: true, hmr: false, watch: null }, optimizeDeps: { noDiscovery: true, include: [] },
});
let stale = [];
try {
  const { coreOpenApiDocument } = await vite.ssrLoadModule('/src/management/openapi-doc.ts');
  const { renderApiTypes } = await vite.ssrLoadModule('/src/management/openapi-types.ts');
  const doc = await coreOpenApiDocument();
  for (const [target, file] of Object.entries(API_TYPES_FILES)) {
    const text = renderApiTypes(doc, target);
    let old = '';
    try { old = readFileSync(join(root, file), 'utf8'); } catch { /* a first run */ }
    if (old === text) continue;
    stale.push(file);
    if (!process.argv.includes('--check')) writeFileSync(join(root, file), text);
  }
} finally {
  await vite.close();
}
if (process.argv.includes('--check')) {
  if (stale.length) console.error(`stale: ${stale.join(', ')} — run npm run gen:api`);
  process.exitCode = stale.length ? 1 : 0;
} else console.log(stale.length ? `wrote ${stale.join(', ')}` : 'api types are up to date');
