import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The web console: built into dist/console/ (served by the gateway at /console) with
 * every script and style bundled; nothing is loaded from another host at run time.
 */
const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/console/',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The Content-Security-Policy allows no inline script; keep the entry an external file.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
