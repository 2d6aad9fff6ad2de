import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInvalidationBus, postgresChannel, redisChannel, type InvalidationBus, type InvalidationKind } from '../src/tenancy/invalidation.js';
import { TtlCache } from '../src/lib/ttl-cache.js';
import { pgQuery, sharedPostgresSchema, startPrivateRedis, type PrivateRedis } from './fleet.js';
import { postJson, startTestGateway, type TestGateway } from './harness.js';

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
const open = (url: string, redisUrl?: string, redisKeyPrefix?: string): InvalidationBus => {
  const bus = createInvalidationBus({ databaseUrl: url, redisUrl, redisKeyPrefix, retryMinMs: 50, retryMaxMs: 200 });
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

  it('reaches the processes under the same redis.key_prefix only', async () => {
    const [a, b, other] = [open('sqlite::memory:', redis.url, 'one:'), open('sqlite::memory:', redis.url, 'one:'), open('sqlite::memory:', redis.url, 'two:')];
    const [rb, ro] = [recorder(b), recorder(other)];
    const ready = Promise.all([rb.next('limits:*'), ro.next('limits:*')]);
    await Promise.all([a.start(), b.start(), other.start()]);
    await ready;
    const got = rb.next('api_key:tg_oneonexx');
    expect(await a.invalidate('api_key', 'tg_oneonexx')).toBe(true);
    await got;
    // Published after a's message: once `other` has it, a's would have come first had it been on the same channel.
    const mark = ro.next('api_key:tg_twotwoxx');
    expect(await open('sqlite::memory:', redis.url, 'two:').invalidate('api_key', 'tg_twotwoxx')).toBe(true); // publish-only, as the CLI does
    await mark;
    expect(ro.seen.filter((e) => !e.endsWith(':*'))).toEqual(['api_key:tg_twotwoxx']);
    expect(rb.seen.filter((e) => !e.endsWith(':*'))).toEqual(['api_key:tg_oneonexx']);
  }, 20_000);
});

describe('gateways sharing one Redis under different redis.key_prefix', () => {
  const run = randomBytes(4).toString('hex');
  const prefixes = [`tgtest-${run}-a:`, `tgtest-${run}-b:`] as const;
  const gateways: TestGateway[] = [];
  afterAll(async () => {
    for (const g of gateways) await g.close();
  });

  it("do not hear each other's invalidations; the default prefix keeps the channel tollgate:invalidate", async () => {
    expect(redisChannel()).toBe('tollgate:invalidate');
    expect(redisChannel(prefixes[0])).toBe(`${prefixes[0]}invalidate`);
    for (const key_prefix of prefixes) {
      gateways.push(await startTestGateway({ yaml: { redis: { url: 'redis://127.0.0.1:6379', key_prefix } }, checkLedgersAfterClose: true }));
    }
    const [ga, gb] = [recorder(gateways[0]!.gateway.invalidation), recorder(gateways[1]!.gateway.invalidation)];
    // What reaches a gateway over Redis: the CLI of the same deployment (a publish-only bus with its prefix).
    const fromCli = async (i: 0 | 1, id: string, seen: ReturnType<typeof recorder>): Promise<void> => {
      const got = seen.next(`api_key:${id}`);
      expect(await open('sqlite::memory:', 'redis://127.0.0.1:6379', prefixes[i]).invalidate('api_key', id)).toBe(true);
      await got;
    };
    expect(await gateways[0]!.gateway.invalidation.invalidate('api_key', 'tg_fromgwaa')).toBe(true);
    expect(await gateways[1]!.gateway.invalidation.invalidate('api_key', 'tg_fromgwbb')).toBe(true);
    // Sent after the gateways' own: had those reached the other gateway, they would have come first.
    await fromCli(0, 'tg_clitoaaa', ga);
    await fromCli(1, 'tg_clitobbb', gb);
    // (A gateway also hears its own message back over Redis: a set, not a list.)
    const heard = (r: ReturnType<typeof recorder>): Set<string> => new Set(r.seen.filter((e) => !e.endsWith(':*')));
    expect(heard(ga)).toEqual(new Set(['api_key:tg_fromgwaa', 'api_key:tg_clitoaaa']));
    expect(heard(gb)).toEqual(new Set(['api_key:tg_fromgwbb', 'api_key:tg_clitobbb']));
  }, 30_000);

  it("keep their sign-in throttles' Redis keys under their own prefix", async () => {
    const failed = await postJson(`${gateways[0]!.url}/api/v1/session`, { email: 'nobody@example.com', password: 'wrong-password' }, undefined, { origin: gateways[0]!.url });
    expect(failed.status).toBe(401);
    const redis = new Redis('redis://127.0.0.1:6379');
    try {
      expect((await redis.keys(`${prefixes[0]}login:*`)).length).toBeGreaterThan(0);
      expect(await redis.keys(`${prefixes[1]}*`)).toEqual([]); // gateway b saw no sign-in, and a wrote nothing under b's prefix
      const all = await redis.keys(`tgtest-${run}-*`);
      await redis.del(...all);
    } finally {
      redis.disconnect();
    }
  });
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
