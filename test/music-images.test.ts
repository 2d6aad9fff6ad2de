import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useGateway } from './fixtures.js';
import { postJson, startTestGateway, type TestGateway } from './harness.js';

/** Reference images given as URLs: downloaded by the gateway, capped, and never from private addresses unless allowed. */
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
let images: Server;
let base: string;
const fetchSettings = { allow_http: true, timeout_ms: 500 };
const open = useGateway({ yaml: { settings: { music: { image_fetch: { ...fetchSettings, allow_hosts: ['127.0.0.1'] } } } } });
const strict = useGateway({ yaml: { settings: { music: { image_fetch: fetchSettings } } } });

beforeAll(async () => {
  images = createServer((req, res) => {
    if (req.url === '/ok.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    if (req.url === '/moved.png') return void res.writeHead(302, { location: '/ok.png' }).end();
    if (req.url === '/big.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.concat([PNG, Buffer.alloc(9 * 1024 * 1024)]));
    if (req.url === '/fake.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end('GIF89a not a png');
    if (req.url === '/slow.png') return void setTimeout(() => res.writeHead(200).end(PNG), 1500);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});
afterAll(() => {
  images.close();
});

async function generate(t: TestGateway, url: string) {
  const { key, org } = await t.org(`img-${Math.random()}`, '1');
  t.sim.resetCalls();
  const r = await postJson(`${t.url}/v1/music`, { model: 'tune-3-pro-preview', prompt: 'from a picture', reference_images: [url] }, key);
  return { r, balance: await t.balance(org.id), calls: t.sim.calls() };
}

describe('reference image URLs', () => {
  it('downloads an allowed image and sends it inline', async () => {
    const { r, balance } = await generate(open, `${base}/ok.png`);
    expect(r.status).toBe(200);
    expect((r.body as { text: string }).text).toContain('inspired by 1 reference image');
    expect(balance).toBe(920_000);
  });

  it.each([
    ['a private address that is not allow-listed', 'strict', '/ok.png', /private address/],
    ['a redirect', 'open', '/moved.png', /redirect/],
    ['an image over the size cap', 'open', '/big.png', /larger than/],
    ['bytes that are not JPEG or PNG', 'open', '/fake.png', /not a JPEG or PNG/],
    ['a download slower than the time cap', 'open', '/slow.png', /did not download within/],
    ['a missing image', 'open', '/nope.png', /status 404/],
  ])('refuses %s with 400, nothing charged, nothing sent upstream', async (_n, which, path, message) => {
    const { r, balance, calls } = await generate(which === 'open' ? open : strict, `${base}${path}`);
    expect(r.status).toBe(400);
    const err = (r.body as ErrorBody).error;
    expect(err.param).toBe('reference_images[0]');
    expect(err.message).toMatch(message);
    expect(balance).toBe(1_000_000);
    expect(calls).toEqual({});
  });

  it.each(['[::127.0.0.1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::1]', '[0:0:0:0:0:0:0:1]', '[::]', '[64:ff9b::7f00:1]', '[2002:7f00:1::1]'])(
    'refuses the IPv6 spelling %s of a loopback address as private, nothing sent upstream', async (host) => {
      const port = new URL(base).port;
      const { r, balance, calls } = await generate(strict, `http://${host}:${port}/ok.png`);
      expect(r.status).toBe(400);
      expect((r.body as ErrorBody).error.message).toMatch(/private address/);
      expect(balance).toBe(1_000_000);
      expect(calls).toEqual({});
    },
  );

  it('refuses plain http unless allowed', async () => {
    const t = await startTestGateway({ sim: open.sim });
    try {
      const { r } = await generate(t, `${base}/ok.png`);
      expect(r.status).toBe(400);
      expect((r.body as ErrorBody).error.message).toMatch(/must be an https:\/\/ URL/);
    } finally {
      await t.close();
    }
  });
});
