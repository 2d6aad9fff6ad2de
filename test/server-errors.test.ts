import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/errors.js';
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
    const { t: g, key } = await startOrgGateway('draining', '1', { sim: t.sim });
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
