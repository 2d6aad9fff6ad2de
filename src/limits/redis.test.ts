import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { held, limiterContract, request, scope } from './contract.testkit.js';
import { createLimiter } from './index.js';
import { periodBounds } from '../model/periods.js';
import { RedisLimiter } from './redis.js';
import type { RedisLike } from '../lib/redis-runner.js';
import { client, CountingRedis, deletePrefix, REDIS_URL, redisLimiterPool, testPrefix } from './redis.testkit.js';
import type { AdmitResult, SpendSeed } from '../model/limits.js';

limiterContract('Redis', () => {
  const prefix = testPrefix();
  const clients: Redis[] = [];
  return {
    make(opts) {
      const redis = client(REDIS_URL);
      clients.push(redis);
      return new RedisLimiter({ redis, seed: opts.seed, holdTtlMs: opts.holdTtlMs, keyPrefix: prefix, clock: opts.now });
    },
    async teardown() {
      if (clients[0]) await deletePrefix(clients[0], prefix);
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
});

function okCount(results: AdmitResult[]): number {
  return results.filter((r) => r.ok).length;
}

describe('Redis driver', () => {
  const pool = redisLimiterPool();
  const { prefix, instance } = pool;

  describe('three instances on one Redis, on Redis\'s clock', () => {
    // A 10-minute window: exact counts must not depend on how fast the machine runs the test.
    const three = () => [0, 1, 2].map(() => instance({ windowMs: 600_000 }));

    it('serves exactly rpm=30 of 90 requests round-robin over three instances', async () => {
      const limiters = three();
      const key = scope({ rpm: 30 });
      const results = await Promise.all(Array.from({ length: 90 }, (_, i) => limiters[i % 3]!.admit(request([key]))));
      expect(okCount(results)).toBe(30);
      expect((await limiters[1]!.usage(key)).rpm).toMatchObject({ used: 30, remaining: 0 });
    });

    it('admits exactly max_concurrent of 50 parallel requests over three instances', async () => {
      const limiters = three();
      const key = scope({ maxConcurrent: 10 });
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => limiters[i % 3]!.admit(request([key]))));
      expect(okCount(results)).toBe(10);
      await Promise.all(held(results).map((h, i) => limiters[i % 3]!.release(h))); // released through another instance's limiter
      expect((await limiters[0]!.usage(key)).concurrency?.used).toBe(0);
    });

    it('never spends more than a $0.01 budget under 200 concurrent requests over three instances', async () => {
      const limiters = three();
      const key = scope({ budget: { micros: 10_000, period: 'total' } });
      let charged = 0;
      const results = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
        const r = await limiters[i % 3]!.admit(request([key], 100, 300));
        if (r.ok) {
          const cost = (i * 7919) % 301;
          charged += cost;
          await limiters[(i + 1) % 3]!.settle(r.hold, { tokens: 50, costMicros: cost });
        }
        return r;
      }));
      expect(okCount(results)).toBeGreaterThanOrEqual(33);
      expect(charged).toBeLessThanOrEqual(10_000);
      expect((await limiters[2]!.usage(key)).budget).toMatchObject({ spentMicros: charged, heldMicros: 0 });
      const refused = results.find((r) => !r.ok);
      expect(refused && !refused.ok && refused.error.code).toBe('budget_exceeded');
    });

    it('seeds a spend counter once even when all three instances find it missing at once', async () => {
      const calls: string[] = [];
      const seed: SpendSeed = async (id) => {
        calls.push(id);
        await new Promise((r) => setImmediate(r));
        return 400;
      };
      const limiters = [0, 1, 2].map(() => instance({ seed }));
      const key = scope({ budget: { micros: 1000, period: 'day' } });
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => limiters[i % 3]!.admit(request([key], 1, 10))));
      expect(okCount(results)).toBe(30);
      expect(calls.length).toBeGreaterThanOrEqual(1);
      expect(calls.length).toBeLessThanOrEqual(3); // at most one read per instance…
      expect((await limiters[0]!.usage(key)).budget).toMatchObject({ spentMicros: 400, heldMicros: 300 }); // …counted once
    });

    it('takes the time from Redis, not from the instance', async () => {
      const limiter = instance();
      const key = scope({ rpm: 5 });
      const before = await pool.admin.time();
      const usage = await limiter.usage(key);
      const after = await pool.admin.time();
      const ms = (t: Array<number | string>) => Number(t[0]) * 1000 + Math.floor(Number(t[1]) / 1000);
      expect(usage.at).toBeGreaterThanOrEqual(ms(before));
      expect(usage.at).toBeLessThanOrEqual(ms(after));
    });
  });

  it('reads a spend seed again once its counter is gone, and never reuses a seed it did not write', async () => {
    const calls: Record<string, number> = {};
    let projectFails = true;
    const key = scope({ budget: { micros: 1000, period: 'total' } });
    const project = scope({ budget: { micros: 1000, period: 'total' } }, 'project');
    const limiter = instance({
      seed: async (id) => {
        calls[id] = (calls[id] ?? 0) + 1;
        if (id === project.id && projectFails) throw new Error('database down');
        return 100 * calls[id]!;
      },
    });
    const refused = await limiter.admit(request([key, project], 1, 10));
    expect(!refused.ok && refused.error.code).toBe('limits_unavailable');
    projectFails = false;
    expect((await limiter.admit(request([key, project], 1, 10))).ok).toBe(true);
    expect(calls).toEqual({ [key.id]: 2, [project.id]: 2 }); // the key's first read was never written: read again
    expect((await limiter.usage(key)).budget?.spentMicros).toBe(200);
    await pool.admin.del(`${prefix}${key.id}:sp:total:0`); // as after a Redis restart or a lapsed TTL
    expect((await limiter.usage(key)).budget?.spentMicros).toBe(300);
    expect(calls[key.id]).toBe(3);
  });

  it('admits in one round trip and settles in one', async () => {
    const counting = new CountingRedis(client(REDIS_URL));
    const limiter = new RedisLimiter({ redis: counting, seed: async () => 0, keyPrefix: prefix });
    const key = scope({ rpm: 100, tpm: 10_000, maxConcurrent: 5, budget: { micros: 1_000_000, period: 'month' } });
    const project = scope({ rpm: 1000, budget: { micros: 5_000_000, period: 'total' } }, 'project');
    const first = await limiter.admit(request([key, project], 10, 10)); // seeds both budgets: admit, then admit with the seeds
    expect(first.ok).toBe(true);
    counting.calls = 0;
    for (let i = 0; i < 10; i++) {
      const r = await limiter.admit(request([key, project], 10, 10));
      if (!r.ok) throw new Error(r.error.message);
      await limiter.settle(r.hold, { tokens: 5, costMicros: 3 });
    }
    expect(counting.calls).toBe(20);
  });

  it('sends the scripts issued in one event-loop turn as one pipeline, each counted as if sent alone', async () => {
    const counting = new CountingRedis(client(REDIS_URL));
    const limiter = new RedisLimiter({ redis: counting, seed: async () => 0, keyPrefix: prefix });
    const key = scope({ rpm: 25, maxConcurrent: 100 });
    const replies = await Promise.all(Array.from({ length: 30 }, () => limiter.admit(request([key], 10, 10))));
    expect({ pipelines: counting.pipelines, calls: counting.calls }).toEqual({ pipelines: 1, calls: 30 });
    // The 26th and later are refused by rpm: each script saw the ones before it.
    expect(replies.map((r) => r.ok)).toEqual([...new Array(25).fill(true), ...new Array(5).fill(false)]);
    expect((await limiter.usage(key)).concurrency?.used).toBe(25);
    await Promise.all(replies.map((r) => (r.ok ? limiter.settle(r.hold, { tokens: 1, costMicros: 0 }) : undefined)));
    expect(counting.pipelines).toBe(2);
    expect((await limiter.usage(key)).concurrency?.used).toBe(0);
  });

  it('sends a script again with its source when Redis forgot it, inside a pipeline too', async () => {
    const counting = new CountingRedis(client(REDIS_URL));
    const limiter = new RedisLimiter({ redis: counting, seed: async () => 0, keyPrefix: prefix });
    const key = scope({ maxConcurrent: 100 });
    expect((await limiter.admit(request([key]))).ok).toBe(true);
    await pool.admin.script('FLUSH');
    const replies = await Promise.all(Array.from({ length: 5 }, () => limiter.admit(request([key]))));
    expect(replies.every((r) => r.ok)).toBe(true);
    expect((await limiter.usage(key)).concurrency?.used).toBe(6);
  });

  it('gives every key it writes a TTL', async () => {
    const own = testPrefix();
    const limiter = new RedisLimiter({ redis: pool.admin, seed: async () => 0, keyPrefix: own });
    const key = scope({ rpm: 100, tpm: 10_000, maxConcurrent: 5, budget: { micros: 1_000_000, period: 'total' } });
    const written = async (): Promise<string[]> => {
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, found] = await pool.admin.scan(cursor, 'MATCH', `${own}*`, 'COUNT', 1000);
        keys.push(...found);
        cursor = next;
      } while (cursor !== '0');
      for (const k of keys) expect(await pool.admin.pttl(k), k).toBeGreaterThan(0);
      return keys.map((k) => k.slice(own.length + key.id.length + 1)).sort();
    };
    const r = await limiter.admit(request([key], 10, 10));
    if (!r.ok) throw new Error(r.error.message);
    expect(await written()).toEqual(['bh', 'bh:sum', 'cc', 'rq', 'sp:total:0', 'tk', 'tk:sum']);
    await limiter.settle(r.hold, { tokens: 5, costMicros: 3 });
    expect(await written()).toEqual(['bh:sum', 'rq', 'sp:total:0', 'tk', 'tk:sum']); // empty sets vanish
    await deletePrefix(pool.admin, own);
  });

  it('computes UTC day and month periods in Lua exactly as in TypeScript', async () => {
    const instants = [
      Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2024, 2, 1), Date.UTC(2023, 1, 28, 12), Date.UTC(2000, 1, 29, 1),
      Date.UTC(2100, 1, 28, 23), Date.UTC(2025, 11, 31, 23, 59, 59, 999), Date.UTC(2026, 0, 1), Date.UTC(1970, 0, 1, 0, 0, 0, 1),
      Date.UTC(2025, 6, 15, 8, 30), Date.UTC(2039, 9, 31, 23),
    ];
    for (const at of instants) {
      const limiter = instance({ clock: () => at });
      for (const period of ['day', 'month'] as const) {
        const usage = await limiter.usage(scope({ budget: { micros: 1, period } }));
        const { start, end } = periodBounds(period, at);
        expect([usage.budget?.periodStart, usage.budget?.resetsAt], `${period} of ${new Date(at).toISOString()}`).toEqual([start, end]);
      }
    }
  });

  it('waits once for a client still connecting: the requests that arrive meanwhile share the wait', async () => {
    const connecting = client(REDIS_URL);
    try {
      const counting = new CountingRedis(connecting);
      const limiter = new RedisLimiter({ redis: counting, seed: async () => 0, keyPrefix: prefix });
      expect(connecting.status).not.toBe('ready');
      const results = await Promise.all(Array.from({ length: 20 }, () => limiter.admit(request([scope({ rpm: 100 })]))));
      expect(okCount(results)).toBe(20);
      expect(counting.readyWaits).toBe(1);
    } finally {
      await connecting.quit();
    }
  });

  it('accepts an ioredis client as it is, through createLimiter', async () => {
    const redis: RedisLike = pool.admin; // compile-time: the interface fits ioredis
    const limiter = createLimiter({ redis, seed: async () => 0, keyPrefix: prefix });
    expect(limiter.stats().driver).toBe('redis');
    expect((await limiter.admit(request([scope({ rpm: 1 })]))).ok).toBe(true);
  });
});
