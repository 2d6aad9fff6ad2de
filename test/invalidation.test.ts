import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInvalidationBus, postgresChannel, type InvalidationBus, type InvalidationKind } from '../src/invalidation.js';
import { TtlCache } from '../src/ttl-cache.js';
import { pgQuery, sharedPostgresSchema, startPrivateRedis, type PrivateRedis } from './fleet.js';

/* The invalidation bus on each transport: delivery between processes' buses, and recovery after the transport drops. */

/** Everything one bus's handlers saw, with a way to wait (bounded) for a given entry. */
function recorder(bus: InvalidationBus): { seen: string[]; next(entry: string): Promise<void> } {
  const seen: string[] = [];
  const waiters: Array<{ entry: string; resolve: () => void }> = [];
  for (const kind of ['api_key', 'provider_key', 'limits'] as InvalidationKind[]) {
    bus.on(kind, (id) => {
      const entry = `${kind}:${id ?? '*'}`;
      seen.push(entry);
      for (const w of waiters.filter((x) => x.entry === entry)) w.resolve();
    });
  }
  return {
    seen,
    next: (entry) => new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${entry} within 15 s; saw ${seen.join(', ')}`)), 15_000);
      waiters.push({ entry, resolve: () => { clearTimeout(timer); resolve(); } });
    }),
  };
}

const buses: InvalidationBus[] = [];
const open = (url: string, redisUrl?: string): InvalidationBus => {
  const bus = createInvalidationBus({ databaseUrl: url, redisUrl, retryMinMs: 50, retryMaxMs: 200 });
  buses.push(bus);
  return bus;
};
afterEach(async () => {
  await Promise.all(buses.splice(0).map((b) => b.close()));
});

describe('TtlCache epoch', () => {
  it('does not cache a value read before an eviction that came in meanwhile', () => {
    const cache = new TtlCache<string, { v: number }>({ max: 10, ttlMs: 60_000, now: Date.now });
    const readAt = cache.epoch;
    cache.delete('a'); // the pushed invalidation arrives while the read is in flight
    cache.set('a', { v: 1 }, readAt);
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', { v: 2 }, cache.epoch);
    expect(cache.get('a')).toEqual({ v: 2 });
    cache.clear();
    expect(cache.get('a')).toBeUndefined();
  });
});

describe('in-process bus (SQLite, no Redis)', () => {
  it('evicts locally and reports that nothing was broadcast', async () => {
    const bus = open('sqlite::memory:');
    const r = recorder(bus);
    expect(bus.transport).toBe('local');
    expect(await bus.invalidate('api_key', 'tg_abcdefgh')).toBe(false);
    expect(r.seen).toEqual(['api_key:tg_abcdefgh']);
  });
});

describe('Redis bus', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await startPrivateRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('reaches every subscribed process; after Redis comes back, clears everything and delivers again', async () => {
    const [a, b] = [open('sqlite::memory:', redis.url), open('sqlite::memory:', redis.url)];
    expect(a.transport).toBe('redis');
    const rb = recorder(b);
    const ready = rb.next('limits:*'); // the first subscription
    await Promise.all([a.start(), b.start()]);
    await ready;
    const got = rb.next('provider_key:org_1');
    expect(await a.invalidate('provider_key', 'org_1')).toBe(true);
    await got;

    await redis.kill();
    expect(await a.invalidate('api_key', 'tg_lost0000')).toBe(false); // nobody to tell: the TTL covers it
    rb.seen.length = 0;
    const cleared = rb.next('api_key:*');
    await redis.start();
    await cleared; // resubscribed: whatever was missed is evicted by clearing
    const after = rb.next('api_key:tg_after000');
    expect(await a.invalidate('api_key', 'tg_after000')).toBe(true);
    await after;
    expect(rb.seen).not.toContain('api_key:tg_lost0000');
  }, 40_000);
});

describe('PostgreSQL bus (no Redis)', () => {
  const schemas = [sharedPostgresSchema('fleet_inv_a'), sharedPostgresSchema('fleet_inv_b')];
  afterAll(async () => {
    await Promise.all(schemas.map((s) => s.drop()));
  });

  it('reaches the processes on the same schema only; after its connection is cut, clears everything and listens again', async () => {
    const [a, b, other] = [open(schemas[0]!.url), open(schemas[0]!.url), open(schemas[1]!.url)];
    expect(a.transport).toBe('postgres');
    const [rb, ro] = [recorder(b), recorder(other)];
    await Promise.all([a.start(), b.start(), other.start()]);
    const got = rb.next('api_key:tg_12345678');
    expect(await a.invalidate('api_key', 'tg_12345678')).toBe(true);
    await got;
    // A NOTIFY travels the whole database: the other schema's process must not have heard it.
    const mark = ro.next('api_key:tg_otherxxx');
    expect(await open(schemas[1]!.url).invalidate('api_key', 'tg_otherxxx')).toBe(true); // publish-only, as the CLI does
    await mark;
    expect(ro.seen.filter((e) => !e.endsWith(':*'))).toEqual(['api_key:tg_otherxxx']);

    const cleared = rb.next('provider_key:*');
    const cut = await pgQuery<{ n: number }>(schemas[0]!.url,
      'SELECT COUNT(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1', [postgresChannel(schemas[0]!.url)]);
    expect(cut[0]!.n).toBe(2); // a and b listen; `other` listens on its own channel
    await cleared;
    const after = rb.next('limits:scope_1');
    expect(await a.invalidate('limits', 'scope_1')).toBe(true);
    await after;
  }, 40_000);
});
