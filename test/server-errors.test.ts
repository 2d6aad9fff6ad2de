import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { startOrgGateway } from './harness.js';

/** Errors raised outside a route (the router, the shutdown) still take the standard body and carry x-request-id. */
const t = useOrgGateway('server-errors', '1');

async function get(path: string): Promise<{ status: number; headers: Headers; body: ErrorBody }> {
  const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${t.key}` } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as ErrorBody };
}

describe('routing errors', () => {
  it('a path segment over the router\'s 100-character limit → 414 uri_too_long in the standard body', async () => {
    const r = await get(`/v1/music/${'x'.repeat(150)}/content`);
    expect(r.status).toBe(414);
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    expect(r.body.error).toMatchObject({ code: 'uri_too_long', type: 'invalid_request_error', param: null });
  });

  it.each(['/v1/music/%ff/content', '/v1/music/%zz/content', '/v1/%E0%A4%A/models'])('a bad percent-escape (%s) → 400 invalid_request in the standard body', async (path) => {
    const r = await get(path);
    expect(r.status).toBe(400);
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    expect(r.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(r.body.error.message).toContain('percent-escape');
  });
});

describe('JSON nesting', () => {
  const deep = (levels: number): unknown => JSON.parse('['.repeat(levels) + ']'.repeat(levels));
  /** The body as text with `levels` nested arrays where the marker is (JSON.stringify itself cannot write 5,000 levels). */
  const nested = (body: (d: unknown) => unknown, levels: number): string => JSON.stringify(body('DEEP')).replace('"DEEP"', '['.repeat(levels) + ']'.repeat(levels));
  it.each([
    ['/v1/chat/completions', (d: unknown) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi', name: d }] })],
    ['/v1/messages', (d: unknown) => ({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], metadata: d })],
    ['/v1/embeddings', (d: unknown) => ({ model: 'text-embedding-3-small', input: 'hi', user: d })],
    ['/v1/music', (d: unknown) => ({ model: 'tune-3-clip-preview', prompt: 'hi', lyrics: d })],
  ])('%s refuses a body nested 5,000 levels deep with 400 before it is used, nothing charged', async (path, body) => {
    const before = await t.balance(t.orgId);
    const res = await fetch(`${t.url}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: nested(body, 5000),
    });
    expect(res.status).toBe(400);
    const err = ((await res.json()) as ErrorBody).error;
    expect(err.code).toBe('invalid_request');
    expect(err.message).toContain('128');
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('accepts a body nested 100 levels deep (within the limit)', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }], metadata: { deep: deep(95) } }),
    });
    expect(res.status).toBe(200);
  });
});

/** Raw HTTP/1.1 responses read off one socket until the server closes it. */
function parseResponses(raw: string): Array<{ status: number; headers: Record<string, string>; body: string }> {
  const out: Array<{ status: number; headers: Record<string, string>; body: string }> = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1')) {
    const end = rest.indexOf('\r\n\r\n');
    const lines = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(lines[0]?.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

describe('shutdown', () => {
  it('a request arriving while the gateway drains gets 503 service_unavailable with x-request-id and x-should-retry: true', async () => {
    const { t: g, key } = await startOrgGateway('draining', '1', { sim: t.sim, checkLedgersAfterClose: true });
    try {
      const { port } = new URL(g.url);
      const socket = connect(Number(port), '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      const ended = new Promise<void>((r) => socket.once('close', () => r()));
      const request = (content: string): string => {
        const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
        return `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      };
      // The first request holds the connection busy upstream; the second, pipelined behind it, arrives during the drain.
      t.sim.resetCalls();
      socket.write(request('slow [[sim:delay_ms=400]]'));
      for (let i = 0; i < 100 && Object.keys(t.sim.calls()).length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const closing = g.close();
      await new Promise((r) => setTimeout(r, 20));
      socket.write(request('late'));
      await closing;
      await ended;
      const [first, second] = parseResponses(Buffer.concat(chunks).toString('utf8'));
      expect(first?.status).toBe(200);
      expect(second?.status).toBe(503);
      expect(second?.headers['x-request-id']).toMatch(/^req_/);
      expect(second?.headers['x-should-retry']).toBe('true');
      expect(JSON.parse(second?.body ?? '{}')).toMatchObject({ error: { code: 'service_unavailable', type: 'server_error', param: null } });
    } finally {
      await g.close();
    }
  });
});
