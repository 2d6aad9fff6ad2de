import { describe, expect, it } from 'vitest';
import { request, scope } from './contract.testkit.js';
import { wantsLease } from './lease.js';
import { RedisLimiter } from './redis.js';
import { client, deletePrefix, REDIS_URL, redisLimiterPool, testPrefix } from './redis.testkit.js';
import type { AdmitResult, Hold, LimitScope } from '../model/limits.js';

/*
 * Lease mode (docs/limits.md, "Exact and lease mode") on the real Redis, three limiters as
 * three instances. The tolerance asserted: never more than the limit plus one lease per
 * instance (a lease is 1 % of a limit per instance), and the counts written back when
 * the leases are returned equal what was admitted and settled, exactly.
 */

const ok = (rs: AdmitResult[]): Hold[] => rs.flatMap((r) => (r.ok ? [r.hold] : []));
const share = (limit: number, instances: number): number => Math.max(1, Math.floor(limit / (100 * instances)));

describe('Redis driver, lease mode', () => {
  const pool = redisLimiterPool({ windowMs: 600_000 });
  const { clients, instance } = pool;

  /** Waves of `wave` concurrent admits round-robin over the instances, `total` in all: leases granted after one wave serve the next. */
  async function waves(limiters: RedisLimiter[], scopes: LimitScope[], total: number, wave: number, tokens = 10, cost = 0): Promise<AdmitResult[]> {
    const out: AdmitResult[] = [];
    for (let sent = 0; sent < total; sent += wave) {
      const n = Math.min(wave, total - sent);
      out.push(...await Promise.all(Array.from({ length: n }, (_, i) => limiters[(sent + i) % limiters.length]!.admit(request(scopes, tokens, cost)))));
    }
    return out;
  }

  it('the mode rule: exact and lease as set; left out, lease from 1000 × instances of rpm and max_concurrent', () => {
    expect(wantsLease({ rpm: 10, mode: 'lease' }, 3)).toBe(true);
    expect(wantsLease({ rpm: 1e9, mode: 'exact' }, 1)).toBe(false);
    expect(wantsLease({ rpm: 3000 }, 3)).toBe(true);
    expect(wantsLease({ rpm: 2999 }, 3)).toBe(false);
    expect(wantsLease({ rpm: 1e6, maxConcurrent: 100 }, 1)).toBe(false);
    expect(wantsLease({ budget: { micros: 1e12, period: 'month' } }, 1)).toBe(false);
  });

  it('rpm over three instances: at most the limit plus one lease per instance, most admits local, the count written back exact', async () => {
    const limiters = [instance(), instance(), instance()];
    const key = scope({ rpm: 3000, mode: 'lease' });
    const results = await waves(limiters, [key], 4000, 40);
    const admitted = ok(results).length;
    expect(admitted).toBeLessThanOrEqual(3000 + 3 * share(3000, 1));
    expect(admitted).toBeGreaterThan(2500);
    const local = limiters.reduce((n, l) => n + (l.stats().leasedAdmits ?? 0), 0);
    expect(local).toBeGreaterThan(admitted / 2);
    // Every response carries the headers; refusals are 429s with a wait.
    for (const r of results) expect(r.headers['x-ratelimit-limit-requests']).toBe('3000');
    for (const r of results) {
      if (r.ok) continue;
      expect(r.error.code).toBe('rate_limit_exceeded');
      // The wait counts leases with their amounts (the exact script's mixed window): within the 10-minute window, never "never".
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(600);
    }
    await Promise.all(limiters.map((l) => l.close())); // every lease returned: unused requests go back
    expect((await instance({ leases: false }).usage(key)).rpm).toMatchObject({ used: admitted, remaining: Math.max(0, 3000 - admitted) });
  });

  it('a budget is never exceeded and its spend is exact: settled in memory, or as an ordinary hold after its lease was returned', async () => {
    const limiters = [instance({ leaseMs: 40 }), instance({ leaseMs: 40 }), instance({ leaseMs: 40 })];
    const key = scope({ rpm: 1_000_000, budget: { micros: 60_000, period: 'day' }, mode: 'lease' });
    let charged = 0;
    let served = 0;
    for (let round = 0; round < 12; round++) {
      const results = await waves(limiters, [key], 60, 30, 10, 300);
      // Settle some now and some after their lease's time is up (then they are settled by the settle script).
      if (round % 3 === 2) await new Promise((r) => setTimeout(r, 60));
      await Promise.all(results.map(async (r, i) => {
        if (!r.ok) return;
        served++;
        const cost = i % 4 === 0 ? 0 : 217;
        if (i % 4 === 0) await limiters[i % 3]!.release(r.hold);
        else await limiters[i % 3]!.settle(r.hold, { tokens: 5, costMicros: cost });
        charged += cost;
      }));
    }
    expect(served).toBeGreaterThan(100);
    expect(charged).toBeLessThanOrEqual(60_000);
    await Promise.all(limiters.map((l) => l.close()));
    const usage = (await instance({ leases: false }).usage(key)).budget;
    expect(usage).toMatchObject({ spentMicros: charged, heldMicros: 0, remainingMicros: 60_000 - charged });
  });

  it('max_concurrent: never more slots than the limit, and every slot back after release', async () => {
    const limiters = [instance(), instance(), instance()];
    const key = scope({ maxConcurrent: 3000, mode: 'lease' });
    const results = await waves(limiters, [key], 3600, 60);
    const holds = ok(results);
    expect(holds.length).toBeLessThanOrEqual(3000);
    expect(holds.length).toBeGreaterThan(2700);
    expect(limiters.reduce((n, l) => n + (l.stats().leasedAdmits ?? 0), 0)).toBeGreaterThan(0);
    await Promise.all(results.map((r, i) => (r.ok ? limiters[i % 3]!.release(r.hold) : undefined)));
    await Promise.all(limiters.map((l) => l.close()));
    expect((await instance({ leases: false }).usage(key)).concurrency).toMatchObject({ used: 0, remaining: 3000 });
  });

  it('tpm: tokens corrected to the metered count, written back when the lease returns', async () => {
    const limiters = [instance(), instance()];
    const key = scope({ tpm: 1_000_000, mode: 'lease' });
    const results = await waves(limiters, [key], 200, 20, 500);
    const holds = ok(results);
    expect(holds.length).toBe(200);
    await Promise.all(results.map((r, i) => (r.ok ? limiters[i % 2]!.settle(r.hold, { tokens: 120, costMicros: 0 }) : undefined)));
    await Promise.all(limiters.map((l) => l.close()));
    expect((await instance({ leases: false }).usage(key)).tpm).toMatchObject({ used: 200 * 120 });
  });

  it('an instance that dies holding leases loses them: its slots and budget come back after the lease TTL', async () => {
    const redis = client(REDIS_URL);
    const own = testPrefix(); // its own instance count: one
    const dying = new RedisLimiter({ redis, seed: async () => 0, keyPrefix: own, windowMs: 600_000, leaseTtlMs: 500, leaseMs: 60_000 });
    const key = scope({ maxConcurrent: 1000, budget: { micros: 100_000, period: 'day' }, mode: 'lease' });
    // The first admit is exact and seeds the budget; a lease is asked beside the next ones, and then admits.
    let exact = 0;
    for (let i = 0; i < 40 && !dying.stats().leasedAdmits; i++) {
      const before = dying.stats().leasedAdmits;
      expect((await dying.admit(request([key], 1, 100))).ok).toBe(true);
      if (dying.stats().leasedAdmits === before) exact++;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(dying.stats().leasedAdmits).toBe(1);
    redis.disconnect(); // gone without returning anything (as a SIGKILL)
    const admitted = exact + (dying.stats().leasedAdmits ?? 0);
    const otherClient = client(REDIS_URL);
    clients.push(otherClient);
    const other = new RedisLimiter({ redis: otherClient, seed: async () => 0, keyPrefix: own, leases: false });
    const held = (await other.usage(key)).concurrency!.used;
    expect(held).toBeGreaterThan(admitted); // its requests' slots and the dead lease's unused ones
    // Bounded wait for the lease TTL (reclaimed by Redis's clock; no timing is asserted).
    let after = held;
    for (let i = 0; i < 40 && after > admitted; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = (await other.usage(key)).concurrency!.used;
    }
    // Left: the slots of its requests (exact ones, and leased ones a renewal turned into holds), which live for the hold TTL as in exact mode.
    expect(after).toBeLessThanOrEqual(admitted);
    expect((await other.usage(key)).budget).toMatchObject({ spentMicros: 0, heldMicros: 100 * after });
    await deletePrefix(pool.admin, own);
  });

  it('a scope set to exact never leases, whatever its limits', async () => {
    const limiter = instance();
    const key = scope({ rpm: 1e9, maxConcurrent: 1e6, mode: 'exact' });
    const results = await waves([limiter], [key], 200, 20);
    expect(ok(results).length).toBe(200);
    expect(limiter.stats().leasedAdmits).toBe(0);
    expect((await limiter.usage(key)).rpm?.used).toBe(200);
  });
});
