import { beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import type { Store } from '../src/store/types.js';
import { roundRobin } from './fleet.js';
import { fleetSuite } from './fleet-suite.js';
import { chatFormat, readEvents, sendStream, STREAM_FORMATS, words } from './stream-formats.js';

/*
 * Issue 26: the run that found the 16 KiB hang. Three gateway processes on one
 * PostgreSQL schema and Redis, 200 concurrent requests, half of them streams of 1,000
 * tokens (every streamed 200 used to hang after ~195 KB). Every stream must arrive whole,
 * every request has its log row with the right status, and the ledger equals the log.
 */
const suite = fleetSuite({
  schema: 'streams', dir: 'tollgate-stream-fleet-', store: true, checkLedgers: true, redisUrl: 'redis://127.0.0.1:6379',
  yaml: ({ redis }) => ({ log: { level: 'warn', flush_interval_ms: 50 }, redis: { url: redis, key_prefix: `tg-streams-${process.pid}:`, timeout_ms: 5000 } }),
});
let key = '';

beforeAll(async () => {
  const org = await createOrg(suite.store, 'stream-fleet', '100', 'standard');
  key = (await createKey(suite.store, org.name, { limits: { rpm: 10_000 } })).key;
});

describe('three instances under 200 concurrent requests', () => {
  it('every 1,000-token stream completes, in every client format; every request is logged; the ledger equals the log', async () => {
    const results = await roundRobin(suite.fleet.urls(), 200, 200, async (url, i) => {
      if (i % 2 === 1) {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST', signal: AbortSignal.timeout(60_000),
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 2000, messages: [{ role: 'user', content: `[[sim:tokens=1000]] json ${i}` }] }),
        });
        const body = (await res.json()) as { usage?: { completion_tokens: number } };
        return { id: res.headers.get('x-request-id')!, status: res.status, ok: body.usage?.completion_tokens === 1000 };
      }
      // Every client format, and every delivery: in one upstream write and in 97-byte slices.
      const format = STREAM_FORMATS[(i / 2) % STREAM_FORMATS.length] ?? chatFormat;
      const slices = i % 4 === 0 ? ',chunk_bytes=97' : '';
      const res = await sendStream(url, key, format, 'gpt-4o-mini', `[[sim:tokens=1000${slices}]] stream ${i}`, 2000, undefined, AbortSignal.timeout(60_000));
      const read = format.read(await readEvents(res));
      return { id: res.headers.get('x-request-id')!, status: res.status, ok: read.terminated && words(read.text) === 1000 && read.completionTokens === 1000 && !read.error };
    });
    expect(results.filter((r) => r.status !== 200 || !r.ok)).toEqual([]);
    // Every row written (the instances flush every 50 ms), each a success.
    const ids = results.map((r) => r.id);
    let rows: Awaited<ReturnType<Store['getLog']>>[] = [];
    for (let i = 0; i < 100; i++) {
      rows = await Promise.all(ids.map((id) => suite.store.getLog(id)));
      if (rows.every((r) => r !== undefined)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(rows.filter((r) => r?.status !== 200 || r.errorCode !== null || r.completionTokens !== 1000).map((r) => r?.requestId)).toEqual([]);
  }, 180_000);
});
