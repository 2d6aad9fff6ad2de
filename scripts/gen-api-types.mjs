#!/usr/bin/env node
/*
 * `npm run gen:api`: writes the management API's TypeScript types from its route schemas —
 * src/management/api-types.ts (what handlers receive) and console/src/api-types.ts with
 * console/src/api-types/ (what the console sends and gets back). The gateway's TypeScript
 * is loaded through vite (no build needed); the document is built on a fastify app that
 * never listens. `--check` writes nothing and exits 1 when any file is stale.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Where each target's files go; a file of its api-types/ folder that is no longer generated is stale too. */
const TARGET_DIRS = { server: 'src/management', console: 'console/src' };

const vite = await createServer({
  configFile: false, root, logLevel: 'error', appType: 'custom',
  server: { middlewareMode: true, hmr: false, watch: null }, optimizeDeps: { noDiscovery: true, include: [] },
});
const check = process.argv.includes('--check');
const stale = [];
try {
  const { coreOpenApiDocument } = await vite.ssrLoadModule('/src/management/openapi-doc.ts');
  const { renderApiTypes } = await vite.ssrLoadModule('/src/management/openapi-files.ts');
  const doc = await coreOpenApiDocument();
  for (const [target, dir] of Object.entries(TARGET_DIRS)) {
    const files = renderApiTypes(doc, target);
    for (const [name, text] of Object.entries(files)) {
      const file = join(dir, name);
      const old = existsSync(join(root, file)) ? readFileSync(join(root, file), 'utf8') : '';
      if (old === text) continue;
      stale.push(file);
      if (check) continue;
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    }
    const folder = join(root, dir, 'api-types');
    for (const name of existsSync(folder) ? readdirSync(folder) : []) {
      if (files[`api-types/${name}`] !== undefined) continue;
      stale.push(join(dir, 'api-types', name));
      if (!check) rmSync(join(folder, name));
    }
  }
} finally {
  await vite.close();
}
if (check) {
  if (stale.length) console.error(`stale: ${stale.join(', ')} — run npm run gen:api`);
  process.exitCode = stale.length ? 1 : 0;
} else console.log(stale.length ? `wrote ${stale.join(', ')}` : 'api types are up to date');
