import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerConsole } from './console.js';

/** The /console static route on its own fastify app, over a bundle folder the test writes. */
let dir: string;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-console-'));
  writeFileSync(join(dir, 'secret.txt'), 'outside the bundle');
  mkdirSync(join(dir, 'bundle'));
  app = Fastify();
  registerConsole(app, join(dir, 'bundle'));
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = async (path: string, headers: Record<string, string> = {}) => {
  const r = await fetch(base + path, { headers });
  return { status: r.status, type: r.headers.get('content-type'), cache: r.headers.get('cache-control'), etag: r.headers.get('etag'), body: await r.text() };
};

describe('the console route', () => {
  it('answers a 503 page naming the fix while the bundle is not built', async () => {
    const r = await get('/console/');
    expect([r.status, r.type, r.cache]).toEqual([503, 'text/html; charset=utf-8', 'no-store']);
    expect(r.body).toContain('npm run build');
  });

  it('serves the bundle once built: index for pages, types, immutable hashed assets, 304, 404 for a missing asset', async () => {
    const b = join(dir, 'bundle');
    mkdirSync(join(b, 'assets'));
    writeFileSync(join(b, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(join(b, 'assets', 'index-abc123.css'), 'body{}');
    writeFileSync(join(b, 'favicon.svg'), '<svg/>');
    writeFileSync(join(b, 'index.html'), '<!doctype html><title>app</title>');
    for (const path of ['/console', '/console/', '/console/orgs/org_1/logs', '/console/orgs/org_1/logs/req_abc']) {
      const r = await get(path);
      expect([path, r.status, r.type, r.cache, r.body]).toEqual([path, 200, 'text/html; charset=utf-8', 'no-cache', '<!doctype html><title>app</title>']);
    }
    const js = await get('/console/assets/index-abc123.js');
    expect([js.status, js.type, js.cache]).toEqual([200, 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable']);
    expect((await get('/console/assets/index-abc123.css')).type).toBe('text/css; charset=utf-8');
    expect((await get('/console/favicon.svg')).type).toBe('image/svg+xml');
    expect((await get('/console/assets/index-abc123.js', { 'if-none-match': js.etag ?? '' })).status).toBe(304);
    expect((await get('/console/assets/gone.js')).status).toBe(404);
    expect((await get('/console/assets/no-extension')).status).toBe(404);
  });

  it('cannot reach a file outside the bundle, however the path is spelled', async () => {
    const paths = ['/console/../secret.txt', '/console/%2e%2e/secret.txt', '/console/..%2fsecret.txt', '/console/..%5csecret.txt',
      '/console/assets/../../secret.txt', '/console/%2fetc%2fpasswd', '/console//etc/passwd', '/console/%00'];
    for (const path of paths) {
      const r = await fetch(base + path.replace('/../', '/%2E%2E/'));
      const text = await r.text();
      expect(text, path).not.toContain('outside the bundle');
      expect(text, path).not.toContain('root:');
    }
  });

  it('reads a rebuilt bundle without a restart', async () => {
    writeFileSync(join(dir, 'bundle', 'index.html'), '<!doctype html><title>rebuilt</title>');
    const later = new Date(Date.now() + 5000);
    utimesSync(join(dir, 'bundle', 'index.html'), later, later);
    expect((await get('/console/')).body).toBe('<!doctype html><title>rebuilt</title>');
  });
});
