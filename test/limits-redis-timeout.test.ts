import { createServer, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import type { ErrorBody } from '../src/lib/errors.js';
import { logRow, postJson, startTestGateway } from './harness.js';

/*
 * `redis.timeout_ms` reaches the limits engine: a "Redis" that accepts connections and never
 * answers (so the client never becomes ready) fails each limits call once the configured
 * bound has passed, and the warning names that bound.
 */
const sockets = new Set<Socket>();
const silent = createServer((s) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

describe('redis.timeout_ms', () => {
  it('bounds each limits call: a Redis that never answers fails a budget closed (503) after the configured bound', async () => {
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const lines: string[] = [];
    const logStream = new PassThrough();
    logStream.on('data', (d: Buffer) => lines.push(d.toString()));
    const t = await startTestGateway({
      yaml: { redis: { url: `redis://127.0.0.1:${port}`, timeout_ms: 40 }, log: { level: 'warn', flush_interval_ms: 20 } },
      logStream, checkLedgersAfterClose: true,
    });
    try {
      const { org } = await t.org('timeout', '5');
      const { key } = await createKey(t.gateway.store, 'timeout', { limits: { budget: { micros: 1_000_000, period: 'day' } } });
      const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }, key);
      expect(r.status).toBe(503);
      expect((r.body as ErrorBody).error.code).toBe('limits_unavailable');
      expect(lines.join('')).toContain('Redis was not connected within 40 ms');
      const row = await logRow(t, r.headers.get('x-request-id')!);
      expect(row).toMatchObject({ errorCode: 'limits_unavailable', costMicros: 0 });
      expect(await t.balance(org.id)).toBe(5_000_000);
    } finally {
      await t.close();
    }
  });
});
