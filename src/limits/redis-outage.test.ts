import type { Redis, RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, scope } from './contract.testkit.js';
import { RedisLimiter } from './redis.js';
import { client, OwnRedis } from './redis.testkit.js';
import type { AdmitResult, Hold, LimitKind, LimitScope, Metered } from '../model/limits.js';

/*
 * Redis goes away mid-run. Each test runs its own redis-server (nothing on disk, like the
 * production one) on an ephemeral port, so it can kill, pause and restart it.
 */

/** Stands in for the request log: settled costs by scope, summed by the spend seed. */
class RequestLog {
  rows: Array<{ scopeId: string; at: number; micros: number }> = [];
  seeds = 0;
  readonly spentSince = async (scopeId: string, since: number): Promise<number> => {
    this.seeds++;
    return this.rows.filter((r) => r.scopeId === scopeId && r.at >= since).reduce((a, r) => a + r.micros, 0);
  };
}

async function settleAndLog(limiter: RedisLimiter, log: RequestLog, hold: Hold, scopes: LimitScope[], metered: Metered): Promise<void> {
  await limiter.settle(hold, metered);
  for (const s of scopes) log.rows.push({ scopeId: s.id, at: Date.now(), micros: metered.costMicros });
}

/** Admits until one is decided by Redis again (bounded: Redis is back within seconds). */
async function untilRecovered(limiter: RedisLimiter, scopes: LimitScope[]): Promise<AdmitResult> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const r = await limiter.admit(request(scopes, 1, 1));
    if (r.ok && !r.degraded.length) return r;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the limiter did not recover after Redis came back');
}

const CLIENTS: Array<[string, RedisOptions]> = [
  ['the gateway\'s client options (offline queue on)', { maxRetriesPerRequest: 1, connectTimeout: 2000 }],
  ['the recommended client options (offline queue off)', { maxRetriesPerRequest: 1, enableOfflineQueue: false }],
];

describe('Redis killed and restarted mid-run', () => {
  for (const [name, options] of CLIENTS) {
    describe(name, () => {
      let own: OwnRedis;
      let redis: Redis;
      beforeAll(async () => {
        own = await OwnRedis.start();
        redis = client(own.url, { ...options, retryStrategy: (times) => Math.min(times * 50, 500) });
      });
      afterAll(async () => {
        redis.disconnect();
        await own.kill();
      });

      it('fails rate limits open and budgets closed at once, then recovers and re-seeds the spend', async () => {
        const log = new RequestLog();
        const degraded: LimitKind[] = [];
        const limiter = new RedisLimiter({ redis, seed: log.spentSince, onDegraded: (kind) => degraded.push(kind) });
        const budgeted = [scope({ rpm: 100, budget: { micros: 10_000, period: 'total' } })];
        const rateOnly = [scope({ rpm: 2, tpm: 100 })];
        for (let i = 0; i < 3; i++) {
          const r = await limiter.admit(request(budgeted, 1, 2000));
          if (!r.ok) throw new Error(r.error.message);
          await settleAndLog(limiter, log, r.hold, budgeted, { tokens: 1, costMicros: 1000 });
        }
        expect(log.seeds).toBe(1);

        await own.kill();
        const open = await Promise.all(Array.from({ length: 5 }, () => limiter.admit(request(rateOnly, 10))));
        for (const r of open) {
          expect(r).toMatchObject({ ok: true, degraded: ['rpm', 'tpm'] }); // rpm=2, yet all 5 pass: failed open
          expect(r.headers).toEqual({ 'x-ratelimit-limit-requests': '2', 'x-ratelimit-limit-tokens': '100' });
        }
        const closed = await limiter.admit(request(budgeted, 1, 10));
        expect(!closed.ok && [closed.error.code, closed.error.status, closed.headers['retry-after']]).toEqual(['limits_unavailable', 503, '1']);
        // The client learns what failed, not where: no host, port or driver message.
        expect(!closed.ok && closed.error.message).toMatch(/^The budget of key:\w+ cannot be checked right now \(the limits store (is not connected|did not answer within 500 ms)\); nothing was charged, retry shortly$/);
        expect(limiter.stats().degraded).toEqual({ rpm: 6, tpm: 5, concurrency: 0, budget: 1 });
        expect(degraded.filter((k) => k === 'budget')).toHaveLength(1);
        await expect(limiter.usage(budgeted[0]!)).rejects.toMatchObject({ code: 'limits_unavailable' });

        await own.restart(); // empty: no windows, no scripts, no spend counters
        const back = await untilRecovered(limiter, budgeted);
        expect(log.seeds).toBe(2); // the lost counter was read again from the log…
        expect((await limiter.usage(budgeted[0]!)).budget).toMatchObject({ spentMicros: 3000, heldMicros: 1 }); // …not from 0
        if (back.ok) await limiter.release(back.hold);
        const fresh = [scope({ rpm: 2, tpm: 100 })]; // (an admit sent as Redis died may yet run on the new one)
        const exact = await Promise.all(Array.from({ length: 5 }, () => limiter.admit(request(fresh, 10))));
        expect(exact.filter((r) => r.ok)).toHaveLength(2); // counted again, exactly
      });
    });
  }
});

describe('Redis that hangs (SIGSTOP) mid-run', () => {
  let own: OwnRedis;
  let redis: Redis;
  beforeAll(async () => {
    own = await OwnRedis.start();
    redis = client(own.url, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
  });
  afterAll(async () => {
    own.resume();
    redis.disconnect();
    await own.kill();
  });

  it('answers from its own timeout, replays the lost settle once, and charges it once', async () => {
    const log = new RequestLog();
    const limiter = new RedisLimiter({ redis, seed: log.spentSince, timeoutMs: 300 });
    const budgeted = [scope({ maxConcurrent: 1, budget: { micros: 10_000, period: 'month' } })];
    const rateOnly = [scope({ rpm: 1000 })];
    const first = await limiter.admit(request(budgeted, 1, 100));
    if (!first.ok) throw new Error(first.error.message);

    own.pause();
    await limiter.settle(first.hold, { tokens: 1, costMicros: 60 }); // sent, unanswered: kept for replay
    expect(limiter.stats().pendingReplays).toBe(1);
    const open = await limiter.admit(request(rateOnly));
    expect(open).toMatchObject({ ok: true, degraded: ['rpm'] });
    const closed = await limiter.admit(request(budgeted, 1, 100));
    expect(!closed.ok && closed.error.message).toMatch(/did not answer within 300 ms/);

    own.resume(); // Redis now runs the settle (and the two admits) it had received
    const back = await untilRecovered(limiter, rateOnly);
    if (back.ok) await limiter.release(back.hold);
    await limiter.close(); // the replays have run
    expect(limiter.stats().pendingReplays).toBe(0);
    // Charged once though the settle ran twice; the late admit's reservation was undone.
    expect((await limiter.usage(budgeted[0]!)).budget).toMatchObject({ spentMicros: 60, heldMicros: 0 });
    expect((await limiter.usage(budgeted[0]!)).concurrency?.used).toBe(0);
  });
});
