import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The web console (console/ built by Vite into dist/console/) served at `/console` on
 * the gateway's own port. Only files found by listing the bundle folder can be served:
 * a request path is looked up in that listing, never joined onto a filesystem path,
 * so `..`, encoded slashes or absolute paths cannot reach anything else. A path with no
 * file extension that is not in the bundle is a page of the single-page app and gets
 * index.html; a missing asset is a 404; an unbuilt bundle a 503 page saying how to build it.
 */

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json; charset=utf-8', '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.webp': 'image/webp', '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8', '.webmanifest': 'application/manifest+json',
};

/** What the console's pages may load: only this origin (no CDN, no inline script). */
const CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "media-src 'self'",
  "connect-src 'self'", "font-src 'self'", "object-src 'none'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

interface BundleFile { body: Buffer; type: string; etag: string; hashed: boolean }
interface Bundle { files: Map<string, BundleFile>; builtAt: number }

function listFiles(root: string, dir = root, out = new Map<string, BundleFile>()): Map<string, BundleFile> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) listFiles(root, full, out);
    else if (e.isFile()) {
      const rel = relative(root, full).split(sep).join('/');
      const st = statSync(full);
      const ext = /\.[a-z0-9]+$/i.exec(e.name)?.[0].toLowerCase() ?? '';
      out.set(rel, {
        body: readFileSync(full), type: TYPES[ext] ?? 'application/octet-stream',
        etag: `"${st.size.toString(36)}-${Math.floor(st.mtimeMs).toString(36)}"`, hashed: rel.startsWith('assets/'),
      });
    }
  }
  return out;
}

function page(status: number, title: string, text: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title} · Tollgate console</title></head>`
    + `<body><main><h1>${title}</h1><p>${text}</p><p>HTTP ${status}</p></main></body></html>`;
}

/** Serves the console bundle in `dir` (default: dist/console of the package) at /console. */
export function registerConsole(app: FastifyInstance, dir: string): void {
  // The listing is re-read when index.html changes (a rebuild), checked with one stat per request.
  let bundle: Bundle | undefined;
  const current = (): Bundle | undefined => {
    let builtAt: number;
    try {
      builtAt = statSync(join(dir, 'index.html')).mtimeMs;
    } catch {
      return (bundle = undefined);
    }
    if (bundle?.builtAt !== builtAt) bundle = { files: listFiles(dir), builtAt };
    return bundle;
  };

  const serve = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    // Not an API request: no request-log row for the console's own files (the gateway's app has an exchange per request).
    request.lifecycle?.exemptFromLog();
    void reply.header('x-content-type-options', 'nosniff').header('referrer-policy', 'same-origin').header('x-frame-options', 'DENY');
    const b = current();
    if (!b) {
      return reply.code(503).header('cache-control', 'no-store').type('text/html; charset=utf-8')
        .send(page(503, 'The console is not built', 'Run <code>npm run build</code> (it runs with <code>npm install</code>) and reload.'));
    }
    const path = (request.params as { '*'?: string })['*'] ?? '';
    let file = path === '' ? b.files.get('index.html') : b.files.get(path);
    if (!file && !/\.[A-Za-z0-9]+$/.test(path) && !path.startsWith('assets/')) file = b.files.get('index.html'); // a page of the app
    if (!file) {
      return reply.code(404).header('cache-control', 'no-store').type('text/html; charset=utf-8')
        .send(page(404, 'Not found', 'No such file in the console. <a href="/console/">Open the console</a>.'));
    }
    void reply.type(file.type).header('etag', file.etag)
      .header('cache-control', file.hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (file.type.startsWith('text/html')) void reply.header('content-security-policy', CSP);
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
    return reply.send(file.body);
  };
  app.get('/console', serve);
  app.get('/console/*', serve);
}
