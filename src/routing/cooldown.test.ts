import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { CooldownBook, retryAfterMs } from './cooldown.js';
import { deploymentsOf } from '../providers/deployments.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');

describe('Retry-After', () => {
  it('reads seconds, an HTTP date and retry-after-ms; ignores what it cannot read; caps at an hour', () => {
    expect(retryAfterMs({ 'retry-after': '2' }, NOW)).toBe(2000);
    expect(retryAfterMs({ 'retry-after': '1.5' }, NOW)).toBe(1500);
    expect(retryAfterMs({ 'retry-after': new Date(NOW + 7000).toUTCString() }, NOW)).toBe(7000);
    expect(retryAfterMs({ 'retry-after': new Date(NOW - 7000).toUTCString() }, NOW)).toBe(0);
    expect(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }, NOW)).toBe(250);
    expect(retryAfterMs({ 'retry-after': 'soon' }, NOW)).toBeUndefined();
    expect(retryAfterMs({}, NOW)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '86400' }, NOW)).toBe(3_600_000);
  });
});

describe('cooldowns shared through Redis', () => {
  const prefix = `tollgate-test-${randomBytes(4).toString('hex')}:`;
  const clients: Redis[] = [];
  const books: CooldownBook[] = [];
  const book = async (): Promise<CooldownBook> => {
    const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
    clients.push(redis);
    const b = new CooldownBook({ now: Date.now, redis, keyPrefix: prefix });
    books.push(b);
    await b.start();
    return b;
  };
  afterAll(async () => {
    for (const b of books) b.close();
    const keys = await clients[0]!.keys(`${prefix}*`);
    if (keys.length > 0) await clients[0]!.del(...keys);
    for (const c of clients) c.disconnect();
  });
  const [east, west] = deploymentsOf('openai', { keys: [{ name: 'east', api_key: 'k1' }, { name: 'west', api_key: 'k2' }] }, 'http://127.0.0.1:9', () => undefined);

  it('a cooldown set on one instance holds on another, which also reads those set before it started; a new key is a new deployment', async () => {
    const a = await book();
    const b = await book();
    a.cool(west!, 5000, '429');
    for (let i = 0; i < 100 && b.state(west!) === 'healthy'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(b.state(west!)).toBe('cooling');
    expect(b.reason(west!)).toBe('429');
    expect(b.state(east!)).toBe('healthy');
    a.reject(east!);
    const late = await book();
    for (let i = 0; i < 100 && late.state(east!) !== 'rejected'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(late.state(east!)).toBe('rejected');
    expect(late.state(west!)).toBe('cooling');
    const [replaced] = deploymentsOf('openai', { keys: [{ name: 'east', api_key: 'k1-new' }] }, 'http://127.0.0.1:9', () => undefined);
    expect(late.state(replaced!)).toBe('healthy');
  });
});

describe('cooldowns with a Redis that never answers', () => {
  it('start resolves without the shared cooldowns (no hold on the gateway\'s start), and cooldowns hold on this instance', async () => {
    // Accepts connections and never answers: ioredis's connect() stays pending (no error, no close).
    const sockets = new Set<Socket>();
    const silent = createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const redis = new Redis(`redis://127.0.0.1:${(silent.address() as { port: number }).port}`, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
    redis.on('error', () => undefined);
    const errors: string[] = [];
    const b = new CooldownBook({ now: Date.now, redis, keyPrefix: 'tollgate-test-silent:', startWaitMs: 50, onError: (_err, what) => errors.push(what) });
    try {
      await b.start();
      const [d] = deploymentsOf('openai', { keys: [{ name: 'only', api_key: 'k' }] }, 'http://127.0.0.1:9', () => undefined);
      expect(b.state(d!)).toBe('healthy');
      b.cool(d!, 60_000, '5xx');
      expect(b.state(d!)).toBe('cooling');
      expect(b.reason(d!)).toBe('5xx');
    } finally {
      b.close();
      redis.disconnect();
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
    // Closing while the connection was pending is not reported as a failure to share cooldowns.
    expect(errors).toEqual([]);
  });
});
