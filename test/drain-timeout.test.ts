import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { SseDecoder, type SseEvent } from '../src/lib/sse.js';
import { buildOnce, cli, killAll, lastLine, query, serve, sleep, writeConfig } from './cli-helpers.js';
import { tempDir } from './harness.js';
import { chatFormat, neverReads } from './stream-formats.js';

/*
 * Issue 15, item 3: SIGTERM with streams that outlast server.shutdown_timeout_ms. At the
 * deadline each stream ends with the drain_timeout error event and is billed for what was
 * delivered; a request whose reply had not started gets a 503; every one has its log row;
 * the process exits 0 and the ledger equals the log.
 */

describe('the drain deadline at shutdown', () => {
  let sim: Simulator;
  let dir = '';
  let config = '';
  let key = '';
  beforeAll(async () => {
    await buildOnce();
    sim = await startSimulator({ port: 0 });
    dir = tempDir();
    config = writeConfig(dir, sim.url, { server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 600 } });
    expect((await cli(['orgs', 'create', 'drain', '--credits', '5', '--config', config])).code).toBe(0);
    key = lastLine((await cli(['keys', 'create', '--org', 'drain', '--config', config])).stdout);
  }, 120_000);
  afterAll(async () => {
    await killAll();
    await sim?.close();
  });

  const send = (url: string, content: string, stream: boolean): Promise<Response> => fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream, max_tokens: 200, messages: [{ role: 'user', content }] }),
  });

  it('cuts each stream with the error event, bills what was delivered, logs every request, exits 0', async () => {
    const server = await serve(config);
    // Streams of 60 tokens, one every 300 ms (18 s): far past the 600 ms deadline.
    const streams = await Promise.all(Array.from({ length: 4 }, (_, i) => send(server.url, `[[sim:tokens=60]] [[sim:chunk_delay_ms=300]] stream ${i}`, true)));
    const readers = streams.map((res) => {
      const decoder = new SseDecoder();
      const events: SseEvent[] = [];
      let firstContent: () => void = () => undefined;
      const started = new Promise<void>((r) => { firstContent = r; });
      const done = (async () => {
        for await (const chunk of res.body!) {
          for (const ev of decoder.push(chunk as Uint8Array)) {
            events.push(ev);
            if (ev.data.includes('"content"')) firstContent();
          }
        }
        return events;
      })();
      return { started, done, id: res.headers.get('x-request-id') };
    });
    // Replies that have not started when the deadline comes (the upstream answers after 30 s).
    const waiting = Array.from({ length: 2 }, (_, i) => send(server.url, `[[sim:delay_ms=30000]] json ${i}`, false));
    await Promise.all(readers.map((r) => r.started));
    // All six are in flight at the upstream before the signal (bounded wait).
    for (let i = 0; i < 200 && (sim.calls()['POST /openai/v1/chat/completions'] ?? 0) < 6; i++) await sleep(10);
    expect(sim.calls()['POST /openai/v1/chat/completions']).toBe(6);
    server.child.kill('SIGTERM');

    for (const r of readers) {
      const events = await r.done;
      const last = events.filter((e) => e.data !== '[DONE]').at(-1);
      expect(JSON.parse(last?.data ?? '{}')).toMatchObject({ error: { code: 'drain_timeout' } });
    }
    for (const res of await Promise.all(waiting)) {
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ error: { code: 'drain_timeout' } });
    }
    expect((await server.exited).code).toBe(0);

    const db = join(dir, 'g.db');
    const rows = query<{ request_id: string; status: number; error_code: string | null; cost_micros: number }>(db,
      'SELECT request_id, status, error_code, cost_micros FROM request_logs');
    expect(rows).toHaveLength(6);
    for (const r of readers) {
      expect(rows.find((row) => row.request_id === r.id)).toMatchObject({ status: 200, error_code: 'drain_timeout' });
      expect(rows.find((row) => row.request_id === r.id)!.cost_micros).toBeGreaterThan(0);
    }
    expect(rows.filter((row) => row.status === 503).map((row) => row.cost_micros)).toEqual([0, 0]);
    const [ledger] = query<{ credited: number; balance: number; charged: number; logged: number }>(db, `SELECT o.balance_micros AS balance,
        (SELECT SUM(amount_micros) FROM ledger WHERE org_id = o.id AND kind = 'credit') AS credited,
        (SELECT COALESCE(SUM(-amount_micros), 0) FROM ledger WHERE org_id = o.id AND kind = 'charge') AS charged,
        (SELECT COALESCE(SUM(cost_micros), 0) FROM request_logs WHERE org_id = o.id) AS logged
      FROM orgs o WHERE o.name = 'drain'`);
    expect(ledger!.charged).toBe(ledger!.logged);
    expect(ledger!.credited - ledger!.balance).toBe(ledger!.logged);
  }, 60_000);

  it('a client that stops reading a large stream cannot hold the exit: exit 0 within shutdown_timeout_ms + 1 s, the stream logged as cut', async () => {
    const server = await serve(config);
    // 60,000 tokens (megabytes, more than the socket buffers hold) to a client that reads only the headers.
    const stuck = await neverReads(server.url, key, chatFormat, 'gpt-4o-mini', '[[sim:tokens=60000]] stuck', 60_000);
    await sleep(300);
    const signalled = Date.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    const took = Date.now() - signalled;
    // Exit 0: not the CLI's forced exit (1, FORCE_EXIT_GRACE_MS after the deadline), which a
    // stuck client used to cause. The time is printed, not asserted (a loaded CI machine): here
    // 600 ms of drain, 0.25 s for the error event, then the log flush and the store's close.
    expect(exit.code).toBe(0);
    console.log(`exited ${took} ms after SIGTERM (shutdown_timeout_ms 600)`);
    expect(took).toBeLessThan(600 + 10_000);
    stuck.socket.destroy();
    const [row] = query<{ status: number; error_code: string | null }>(join(dir, 'g.db'), `SELECT status, error_code FROM request_logs WHERE request_id = '${stuck.id}'`);
    expect(row).toEqual({ status: 200, error_code: 'drain_timeout' });
  }, 60_000);
});
