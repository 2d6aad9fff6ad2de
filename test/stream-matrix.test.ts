import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../src/lib/tokens.js';
import type { LogRow } from '../src/store/types.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, type TestGateway } from './harness.js';
import { DIALECT_MODELS, neverReads, readEvents, responsesFormat, sendStream, STREAM_FORMATS, words } from './stream-formats.js';

/**
 * Issue 26: streams at production sizes, every client format × every upstream dialect.
 * A stream whose last write was 16 KiB or more used to hang forever (a corked socket
 * never drains) and was billed as a success; no test streamed more than ~20 tokens.
 * Each cell reads the whole stream and checks it is complete and well formed (text,
 * finish reason, usage, terminator), the log row, and that the charge is what was
 * delivered (the fixture checks balance == Σ logged costs after every test).
 */

const t = useOrgGateway('streams', '100', { yaml: { server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 5000, stream_stall_timeout_ms: 1500 } } }, { ledger: true });

/** Reply sizes and how the simulator delivers them: one write, slices that cut across events, slices around 16 KiB and 64 KiB. */
const DELIVERIES: readonly { tokens: number; how: string; marker: string }[] = [
  { tokens: 1, how: 'one read', marker: '' },
  { tokens: 1000, how: 'one read', marker: '' },
  { tokens: 1000, how: '97-byte reads', marker: '[[sim:chunk_bytes=97]]' },
  { tokens: 16000, how: 'one read', marker: '' },
  { tokens: 16000, how: 'reads straddling 16 KiB', marker: '[[sim:chunk_bytes=16385]]' },
  { tokens: 16000, how: 'reads straddling 64 KiB', marker: '[[sim:chunk_bytes=65537]]' },
];

describe.each(STREAM_FORMATS)('$name streams', (format) => {
  describe.each(DIALECT_MODELS)('from the $dialect dialect', ({ model }) => {
    it.each(DELIVERIES)('$tokens tokens in $how: complete, logged 200, billed as delivered', async ({ tokens, marker }) => {
      const res = await sendStream(t.url, t.key, format, model, `[[sim:tokens=${tokens}]] ${marker} go`, 20_000);
      expect(res.status).toBe(200);
      const read = format.read(await readEvents(res));
      expect(read.error).toBeUndefined();
      expect(words(read.text)).toBe(tokens);
      expect(read.finish).toBeDefined();
      expect(read.completionTokens).toBe(tokens);
      expect(read.terminated).toBe(true);
      const row = await logRow(t, res.headers.get('x-request-id')!);
      expect(row).toMatchObject({ status: 200, errorCode: null, completionTokens: tokens, costEstimated: false });
      expect(row.costMicros).toBeGreaterThan(0);
    });

    it('an upstream that fails mid-stream (error event, or a dropped connection, in 97-byte reads): an error event ends it, logged and billed for the words delivered', async () => {
      for (const fault of ['stream_error', 'drop_mid_stream']) {
        const res = await sendStream(t.url, t.key, format, model, `[[sim:tokens=1000,${fault},chunk_bytes=97]] go`, 20_000);
        const read = format.read(await readEvents(res));
        expect(read.error, fault).toBe('upstream_error');
        expect(read.terminated).toBe(false);
        const row = await logRow(t, res.headers.get('x-request-id')!);
        expect(row).toMatchObject({ status: 200, errorCode: 'upstream_error', costEstimated: true });
        // Billed exactly for what the client received (counted as the dialect counts a broken stream).
        expect(deliveredCounts(read.text)).toContain(row.completionTokens);
        expect(words(read.text)).toBeGreaterThan(0);
        expect(words(read.text)).toBeLessThan(1000);
      }
    });

    it('a client that reads slowly (backpressure for seconds) still gets all of 16,000 tokens', async () => {
      const res = await sendStream(t.url, t.key, format, model, '[[sim:tokens=16000]] go', 20_000);
      const read = format.read(await readEvents(res, 40));
      expect(words(read.text)).toBe(16000);
      expect(read.terminated).toBe(true);
      expect(await logRow(t, res.headers.get('x-request-id')!)).toMatchObject({ status: 200, errorCode: null, completionTokens: 16000 });
    });

  });

  it('a client that stops reading is cut after server.stream_stall_timeout_ms: logged stream_stalled, billed for what was written', async () => {
    // Each format from another dialect. 60,000 tokens (megabytes) is more than the loopback socket buffers hold.
    const { model } = DIALECT_MODELS[STREAM_FORMATS.indexOf(format) % DIALECT_MODELS.length]!;
    const { socket, id } = await neverReads(t.url, t.key, format, model, '[[sim:tokens=60000]] go', 60_000);
    const row = await logRowWithin(t, id, 30_000);
    expect(row).toMatchObject({ status: 200, errorCode: 'stream_stalled', costEstimated: true });
    expect(row.completionTokens).toBeGreaterThan(0);
    expect(row.completionTokens).toBeLessThan(60_000);
    // The gateway closed the connection rather than wait for the client forever: reading again, the client finds its end.
    const closed = new Promise((r) => socket.once('close', r));
    socket.resume();
    await closed;
  });
});

/**
 * The completion tokens a broken stream may be billed for what the client received: a
 * token per word where the upstream's events count them (the simulator's words), or the
 * estimate of each delta's text where they do not (Anthropic's, Responses' deltas).
 */
function deliveredCounts(text: string): number[] {
  return [words(text), text.split(' ').reduce((n, w, i) => n + estimateTokens(i === 0 ? w : ` ${w}`), 0)];
}

async function logRowWithin(gw: TestGateway, id: string, ms: number): Promise<LogRow> {
  const until = Date.now() + ms;
  for (;;) {
    await gw.gateway.log.flush();
    const row = await gw.gateway.store.getLog(id);
    if (row || Date.now() > until) return row ?? Promise.reject(new Error(`no log row for ${id} within ${ms} ms`));
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a final event over 16 KiB', () => {
  // Codex CLI sends ~18 KB of tools; `response.completed` echoes them, so its last write is always larger than 16 KiB.
  const tools = Array.from({ length: 40 }, (_, i) => ({
    type: 'function', name: `tool_${i}`, description: `${'A tool that does one thing well. '.repeat(15)}(${i})`,
    parameters: { type: 'object', properties: { path: { type: 'string', description: 'where' } }, required: ['path'] },
  }));

  it.each(DIALECT_MODELS)('/v1/responses with 20 KB of tools from the $dialect dialect completes, in one read and in many', async ({ model }) => {
    expect(JSON.stringify(tools).length).toBeGreaterThan(20_000);
    for (const marker of ['', '[[sim:chunk_bytes=97]]']) {
      for (const tokens of [5, 200, 1000]) {
        const res = await sendStream(t.url, t.key, responsesFormat, model, `[[sim:tokens=${tokens}]] ${marker} say it`, 20_000, { tools, tool_choice: 'none' });
        expect(res.status).toBe(200);
        const events = await readEvents(res);
        const read = responsesFormat.read(events);
        expect(read.terminated).toBe(true);
        expect(words(read.text)).toBe(tokens);
        expect(events.at(-1)!.data.length).toBeGreaterThan(16 * 1024);
        expect(await logRow(t, res.headers.get('x-request-id')!)).toMatchObject({ status: 200, errorCode: null, completionTokens: tokens });
      }
    }
  });
});
