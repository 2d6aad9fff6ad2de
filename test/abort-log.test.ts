import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { GatewayPlugin } from '../src/pipeline/plugin.js';
import { post } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';

/*
 * Issue 15, item 1: a client that hangs up while the reply is being written is charged
 * and must still get its log row. Two ways to be there: (1) the simulator holds each
 * reply for 200 ms and each client aborts within a few ms of that moment (some before
 * the headers, some while the body is written, some after), concurrently; (2) a client
 * reads the headers of a large reply, stops reading (the gateway's write cannot finish)
 * and hangs up. Afterwards every request the gateway saw has exactly one row, and the
 * org's balance moved by exactly the sum of the logged costs.
 */

/** Records the id of every exchange the gateway starts (a pre-auth hook runs for each model request). */
const seen = new Set<string>();
const recorder: GatewayPlugin = {
  name: 'seen-recorder', modalities: {},
  register: (api) => api.hook('pre-auth', (ex) => void seen.add(ex.id)),
};

const t = useOrgGateway('aborts', '50', { extraPlugins: [recorder] }, { ledger: true });

const body = (i: number, stream: boolean, directives: string, n = 1): unknown => ({
  model: 'gpt-4o-mini', stream, max_tokens: 16000, n,
  messages: [{ role: 'user', content: `${directives} hello ${i}` }],
});

/** `n` concurrent requests, each aborting `at(i)` ms after it was sent. */
async function abortingClients(n: number, stream: boolean, at: (i: number) => number): Promise<void> {
  await Promise.all(Array.from({ length: n }, async (_, i) => {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), at(i));
    try {
      const res = await post(`${t.url}/v1/chat/completions`, body(i, stream, '[[sim:delay_ms=200]] [[sim:tokens=40]]'), t.key, {}, ac.signal);
      await res.arrayBuffer();
    } catch {
      // the abort: expected for most clients
    } finally {
      clearTimeout(timer);
    }
  }));
}

/** `n` concurrent clients that read a large reply's headers, then stop reading and hang up; returns the request ids. */
async function stalledReaders(n: number, stream: boolean): Promise<string[]> {
  const url = new URL(`${t.url}/v1/chat/completions`);
  return Promise.all(Array.from({ length: n }, (_, i) => new Promise<string>((resolve, reject) => {
    // A JSON reply of 40 choices is ~3.5 MB: more than the loopback socket takes while nobody reads.
    const payload = JSON.stringify(body(i, stream, '[[sim:tokens=100000]]', stream ? 1 : 40));
    const req = httpRequest({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}`, 'content-length': Buffer.byteLength(payload) },
    }, (res) => {
      res.pause();
      // Long enough for the gateway to have written what the socket takes, and to be waiting on the rest.
      setTimeout(() => {
        req.destroy();
        resolve(String(res.headers['x-request-id']));
      }, 300);
    });
    req.on('error', () => undefined);
    req.once('error', reject);
    req.end(payload);
  })));
}

/** Every exchange the gateway saw has one row (bounded wait: the gateway notices each hang-up on its own time). */
async function expectOneRowEach(orgId: string): Promise<void> {
  let rows: Array<{ requestId: string }> = [];
  for (let i = 0; i < 100; i++) {
    await t.gateway.log.flush();
    rows = await t.gateway.store.logQuery.list({ orgId }, 1000);
    if (rows.length >= seen.size) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(new Set(rows.map((r) => r.requestId))).toEqual(seen);
  expect(rows.length).toBe(seen.size);
  const audit = await t.gateway.store.audit(orgId);
  expect(audit.held).toBe(0);
  expect(audit.credited - audit.balance).toBe(audit.logged);
  expect(audit.charged).toBe(audit.logged);
}

describe('a client that hangs up while the reply is written', () => {
  it('streams aborted around the moment the reply starts: one row each, the ledger equals the logged costs', async () => {
    await abortingClients(60, true, (i) => 185 + (i % 30));
    await expectOneRowEach(t.orgId);
  });

  it('JSON replies aborted around the moment the reply starts: the same', async () => {
    await abortingClients(60, false, (i) => 185 + (i % 30));
    await expectOneRowEach(t.orgId);
  });

  it('clients that stop reading a large reply and hang up: each is charged and logged once', async () => {
    const ids = [...await stalledReaders(4, false), ...await stalledReaders(4, true)];
    expect(ids.every((id) => id.startsWith('req_'))).toBe(true);
    await expectOneRowEach(t.orgId);
    const audit = await t.gateway.store.audit(t.orgId);
    expect(audit.logged).toBeGreaterThan(0);
  }, 60_000);
});
