import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdmitRequest, AdmitResult, Hold, Limiter, LimitScope, LimitSpec, SpendSeed } from '../model/limits.js';

/*
 * One contract, two drivers: every test below runs against the in-process driver and
 * against Redis, both on an injected clock so window edges are exact and nothing sleeps.
 */

export interface ContractOptions {
  now: () => number;
  seed: SpendSeed;
  holdTtlMs?: number | undefined;
}

export interface ContractEnv {
  /** A limiter; for Redis, every limiter made by one env shares the same counters. */
  make(opts: ContractOptions): Limiter;
  teardown(): Promise<void>;
}

export class FakeClock {
  constructor(public t: number) {}
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

const NOON = Date.UTC(2025, 0, 15, 12, 0, 0);
const noSpend: SpendSeed = () => Promise.resolve(0);

/** A scope id no other test (or run) uses. */
export function scope(limits: LimitSpec, name = 'key'): LimitScope {
  return { id: `${name}:${randomBytes(6).toString('hex')}`, limits };
}

export function request(scopes: LimitScope[], tokens = 10, costMicros = 0): AdmitRequest {
  return { requestId: `req_${randomBytes(6).toString('hex')}`, scopes, tokens, costMicros };
}

export function held(results: AdmitResult[]): Hold[] {
  return results.flatMap((r) => (r.ok ? [r.hold] : []));
}

function codes(results: AdmitResult[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const key = r.ok ? 'ok' : r.error.code;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** Deterministic costs in [0, bound] (a seeded LCG, so a failure reproduces). */
function costs(n: number, bound: number): number[] {
  let x = 12345;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x % (bound + 1);
  });
}

export function limiterContract(name: string, setup: () => Promise<ContractEnv> | ContractEnv): void {
  describe(`limits contract: ${name}`, () => {
    let env: ContractEnv;
    beforeAll(async () => {
      env = await setup();
    });
    afterAll(async () => {
      await env.teardown();
    });
    const make = (opts: Partial<ContractOptions> & { clock?: FakeClock } = {}) => {
      const clock = opts.clock ?? new FakeClock(NOON);
      return { clock, limiter: env.make({ now: clock.now, seed: opts.seed ?? noSpend, holdTtlMs: opts.holdTtlMs }) };
    };

    it('admits exactly rpm requests in any 60 s, across a minute boundary, and frees them one by one', async () => {
      const { clock, limiter } = make({ clock: new FakeClock(Date.UTC(2025, 0, 15, 12, 0, 59, 990)) });
      const key = scope({ rpm: 30 });
      const first: AdmitResult[] = [];
      for (let i = 0; i < 90; i++) {
        first.push(await limiter.admit(request([key])));
        clock.advance(1); // 90 requests over 12:00:59.990 – 12:01:00.079
      }
      expect(codes(first)).toEqual({ ok: 30, rate_limit_exceeded: 60 });
      expect(first.slice(0, 30).every((r) => r.ok)).toBe(true);
      // The first was admitted at t0 = 59.990 s; it still counts until t0 + 60 s.
      clock.t = Date.UTC(2025, 0, 15, 12, 1, 59, 989);
      expect((await limiter.admit(request([key]))).ok).toBe(false);
      clock.t += 1;
      const edge = await Promise.all(Array.from({ length: 5 }, () => limiter.admit(request([key]))));
      expect(codes(edge)).toEqual({ ok: 1, rate_limit_exceeded: 4 });
      expect((await limiter.usage(key)).rpm).toMatchObject({ limit: 30, used: 30, remaining: 0 });
    });

    it('admits exactly rpm of 90 concurrent requests, and refusals wait for the oldest to leave', async () => {
      const { limiter } = make();
      const key = scope({ rpm: 30 });
      const results = await Promise.all(Array.from({ length: 90 }, () => limiter.admit(request([key]))));
      expect(codes(results)).toEqual({ ok: 30, rate_limit_exceeded: 60 });
      const refused = results.find((r) => !r.ok);
      expect(refused && !refused.ok && refused.error.status).toBe(429);
      expect(refused?.headers).toMatchObject({ 'retry-after': '60', 'x-ratelimit-remaining-requests': '0' });
    });

    it('reserves the token bound against tpm and corrects it to the metered count at settle', async () => {
      const { limiter } = make();
      const key = scope({ tpm: 1000 });
      const a = await limiter.admit(request([key], 600));
      expect(a.ok && a.headers['x-ratelimit-remaining-tokens']).toBe('400');
      const b = await limiter.admit(request([key], 600));
      expect(!b.ok && b.error.code).toBe('rate_limit_exceeded');
      expect(!b.ok && b.error.message).toMatch(/tokens per minute: limit 1000, used 600, requested 600/);
      if (!a.ok) throw new Error('unreachable');
      await limiter.settle(a.hold, { tokens: 100, costMicros: 0 });
      expect((await limiter.usage(key)).tpm).toMatchObject({ used: 100, remaining: 900 });
      const c = await limiter.admit(request([key], 600));
      expect(c.ok && c.headers['x-ratelimit-remaining-tokens']).toBe('300');
      if (!c.ok) throw new Error('unreachable');
      await limiter.release(c.hold); // failed request: its tokens are given back
      await limiter.release(c.hold); // a second release changes nothing
      expect((await limiter.usage(key)).tpm).toMatchObject({ used: 100 });
    });

    it('caps a reservation above the whole tpm at the limit: admitted into an empty window only', async () => {
      const { clock, limiter } = make();
      const key = scope({ tpm: 1000 });
      const big = await limiter.admit(request([key], 50_000));
      expect(big.ok && big.headers['x-ratelimit-remaining-tokens']).toBe('0');
      expect((await limiter.admit(request([key], 1))).ok).toBe(false);
      if (!big.ok) throw new Error('unreachable');
      await limiter.settle(big.hold, { tokens: 1500, costMicros: 0 }); // metered is the truth, even above the limit
      clock.advance(59_999);
      expect((await limiter.usage(key)).tpm?.used).toBe(1500);
      clock.advance(1);
      expect((await limiter.admit(request([key], 1000))).ok).toBe(true);
    });

    it('admits exactly max_concurrent of 50 parallel requests; settle and release free slots', async () => {
      const { limiter } = make();
      const key = scope({ maxConcurrent: 10 });
      const results = await Promise.all(Array.from({ length: 50 }, () => limiter.admit(request([key]))));
      expect(codes(results)).toEqual({ ok: 10, rate_limit_exceeded: 40 });
      const holds = held(results);
      await limiter.settle(holds[0]!, { tokens: 5, costMicros: 0 });
      await limiter.release(holds[1]!);
      const again = await Promise.all(Array.from({ length: 5 }, () => limiter.admit(request([key]))));
      expect(codes(again)).toEqual({ ok: 2, rate_limit_exceeded: 3 });
      expect((await limiter.usage(key)).concurrency).toEqual({ limit: 10, used: 10, remaining: 0 });
    });

    it('never overshoots a budget under 200 concurrent admits with random metered costs', async () => {
      const { limiter } = make();
      const key = scope({ budget: { micros: 10_000, period: 'total' } });
      const bound = 300;
      const burst = await Promise.all(Array.from({ length: 200 }, () => limiter.admit(request([key], 10, bound))));
      expect(codes(burst)).toEqual({ ok: 33, budget_exceeded: 167 }); // 33 × 300 ≤ 10 000 < 34 × 300
      let charged = 0;
      const metered = costs(400, bound);
      await Promise.all(held(burst).map((h, i) => {
        charged += metered[i]!;
        return limiter.settle(h, { tokens: 10, costMicros: metered[i]! });
      }));
      // Admit-then-settle races: the spend plus the holds in flight must stay within the budget.
      await Promise.all(Array.from({ length: 200 }, async (_, i) => {
        const r = await limiter.admit(request([key], 10, bound));
        if (!r.ok) return;
        const cost = metered[200 + i]!;
        charged += cost;
        await limiter.settle(r.hold, { tokens: 10, costMicros: cost });
      }));
      const usage = (await limiter.usage(key)).budget;
      expect(usage).toMatchObject({ spentMicros: charged, heldMicros: 0, remainingMicros: 10_000 - charged });
      expect(charged).toBeLessThanOrEqual(10_000);
    });

    it('shares a project scope between two keys, and reports the tighter scope in the headers', async () => {
      const { limiter } = make();
      const project = scope({ rpm: 10 }, 'project');
      const keyA = scope({ rpm: 4 });
      const keyB = scope({ rpm: 100 });
      const a1 = await limiter.admit(request([keyA, project]));
      expect(a1.headers).toMatchObject({ 'x-ratelimit-limit-requests': '4', 'x-ratelimit-remaining-requests': '3' });
      const results = [a1];
      for (let i = 0; i < 19; i++) results.push(await limiter.admit(request([i % 2 ? keyA : keyB, project])));
      expect(codes(results)).toEqual({ ok: 10, rate_limit_exceeded: 10 });
      expect((await limiter.usage(keyA)).rpm?.used).toBe(4);
      expect((await limiter.usage(keyB)).rpm?.used).toBe(6);
      expect((await limiter.usage(project)).rpm?.used).toBe(10);
      // Many scopes read at once (a list page) say what each read alone says, in order, and an unseeded budget is seeded.
      const budgeted = scope({ budget: { micros: 1_000, period: 'day' } });
      const many = await limiter.usageOf([keyB, budgeted, keyA, project]);
      expect(many.map((u) => u.rpm?.used ?? null)).toEqual([6, null, 4, 10]);
      expect(many[1]!.budget).toMatchObject({ spentMicros: 0, remainingMicros: 1_000 });
      expect(many.map((u) => ({ ...u, at: 0 }))).toEqual((await Promise.all([keyB, budgeted, keyA, project].map((s) => limiter.usage(s)))).map((u) => ({ ...u, at: 0 })));
      expect(await limiter.usageOf([])).toEqual([]);
      const last = await limiter.admit(request([keyB, project]));
      expect(last.headers).toMatchObject({ 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': '0' });
    });

    it('changes nothing in any scope when one scope refuses', async () => {
      const { limiter } = make();
      const key = scope({ rpm: 10, tpm: 1000, maxConcurrent: 5, budget: { micros: 1000, period: 'day' } });
      const project = scope({ budget: { micros: 100, period: 'month' } }, 'project');
      const before = await Promise.all([limiter.usage(key), limiter.usage(project)]);
      const r = await limiter.admit(request([key, project], 500, 200));
      expect(!r.ok && r.error.code).toBe('budget_exceeded');
      const after = await Promise.all([limiter.usage(key), limiter.usage(project)]);
      expect(after).toEqual(before);
      expect(after[0]).toMatchObject({ rpm: { used: 0 }, tpm: { used: 0 }, concurrency: { used: 0 }, budget: { heldMicros: 0 } });
    });

    it('sends the OpenAI rate-limit headers with values that go down, and retry-after on a 429', async () => {
      const { clock, limiter } = make();
      const key = scope({ rpm: 3, tpm: 100 });
      const r1 = await limiter.admit(request([key], 10));
      expect(r1.headers).toEqual({
        'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '2', 'x-ratelimit-reset-requests': '1m0s',
        'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '90', 'x-ratelimit-reset-tokens': '1m0s',
      });
      clock.advance(20_500);
      const r2 = await limiter.admit(request([key], 30));
      expect(r2.headers).toMatchObject({ 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-reset-requests': '39.5s', 'x-ratelimit-remaining-tokens': '60' });
      await limiter.admit(request([key], 10));
      const r4 = await limiter.admit(request([key], 10));
      expect(r4.ok).toBe(false);
      if (r4.ok) throw new Error('unreachable');
      expect(r4.headers).toEqual({
        'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '39.5s',
        'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '50', 'x-ratelimit-reset-tokens': '39.5s',
        'retry-after': '40', 'retry-after-ms': '39500',
      });
      expect(r4.error.extras.headers).toEqual(r4.headers);
      expect(r4.error.message).toMatch(/requests per minute: limit 3, used 3, requested 1; retry in 39.5s/);
    });

    it('refuses a spent daily budget until the next UTC day, and says so', async () => {
      const { clock, limiter } = make({ clock: new FakeClock(Date.UTC(2025, 0, 15, 18, 0, 0)) });
      const key = scope({ budget: { micros: 1000, period: 'day' } });
      const a = await limiter.admit(request([key], 1, 800));
      if (!a.ok) throw new Error('admit refused');
      await limiter.settle(a.hold, { tokens: 1, costMicros: 700 });
      const b = await limiter.admit(request([key], 1, 400));
      expect(!b.ok && b.error.code).toBe('budget_exceeded');
      expect(b.headers['retry-after']).toBe(String(6 * 3600));
      expect(!b.ok && b.error.message).toMatch(/\$0\.000300 of the daily budget of \$0\.001000 is left; it resets in 6h0m0s, at 2025-01-16T00:00:00.000Z/);
      const usage = await limiter.usage(key);
      expect(usage.budget).toEqual({
        limitMicros: 1000, period: 'day', spentMicros: 700, heldMicros: 0, remainingMicros: 300,
        periodStart: Date.UTC(2025, 0, 15), resetsAt: Date.UTC(2025, 0, 16),
      });
      clock.t = Date.UTC(2025, 0, 16);
      expect((await limiter.admit(request([key], 1, 400))).ok).toBe(true);
    });

    it('settles a request admitted before a period ends into that period', async () => {
      const { clock, limiter } = make({ clock: new FakeClock(Date.UTC(2025, 0, 31, 23, 59, 59)) });
      const key = scope({ budget: { micros: 1000, period: 'month' } });
      const a = await limiter.admit(request([key], 1, 900));
      if (!a.ok) throw new Error('admit refused');
      clock.advance(2000); // February now
      const feb = await limiter.admit(request([key], 1, 100)); // the January hold still counts while in flight
      expect(feb.ok).toBe(true);
      expect((await limiter.admit(request([key], 1, 100))).ok).toBe(false);
      await limiter.settle(a.hold, { tokens: 1, costMicros: 900 });
      expect((await limiter.usage(key)).budget).toMatchObject({ spentMicros: 0, heldMicros: 100, periodStart: Date.UTC(2025, 1, 1), resetsAt: Date.UTC(2025, 2, 1) });
    });

    it('frees the slot and budget hold of a holder that never settles after the hold TTL', async () => {
      const { clock, limiter } = make({ holdTtlMs: 10_000 });
      const key = scope({ maxConcurrent: 1, budget: { micros: 1000, period: 'total' } });
      const crashed = await limiter.admit(request([key], 1, 1000));
      expect(crashed.ok).toBe(true); // …and its instance dies: no settle, no release
      clock.advance(9_999);
      const blocked = await limiter.admit(request([key], 1, 1000));
      expect(!blocked.ok && blocked.error.code).toBe('budget_exceeded');
      expect((await limiter.usage(key)).concurrency?.used).toBe(1);
      clock.advance(1);
      expect((await limiter.usage(key)).budget).toMatchObject({ heldMicros: 0, spentMicros: 0 });
      expect((await limiter.admit(request([key], 1, 1000))).ok).toBe(true);
    });

    it('seeds a budget\'s spend once under concurrent first use, and starts from it', async () => {
      const calls: Array<[string, number]> = [];
      const seed: SpendSeed = async (id, since) => {
        calls.push([id, since]);
        await new Promise((r) => setImmediate(r)); // a database read takes a turn of the event loop
        return 400;
      };
      const { limiter } = make({ seed });
      const key = scope({ budget: { micros: 1000, period: 'month' } });
      const pending = Array.from({ length: 50 }, () => limiter.admit(request([key], 1, 10)));
      const results = await Promise.all(pending);
      expect(codes(results)).toEqual({ ok: 50 });
      expect(calls).toEqual([[key.id, Date.UTC(2025, 0, 1)]]);
      expect((await limiter.usage(key)).budget).toMatchObject({ spentMicros: 400, heldMicros: 500 });
      expect(calls).toHaveLength(1);
    });

    it('refuses with 503 limits_unavailable when the spend seed fails, and charges nothing', async () => {
      let fail = true;
      const { limiter } = make({ seed: async () => (fail ? Promise.reject(new Error('database down')) : 0) });
      const key = scope({ rpm: 5, budget: { micros: 1000, period: 'day' } });
      const r = await limiter.admit(request([key], 1, 10));
      expect(!r.ok && [r.error.code, r.error.status, r.headers['retry-after']]).toEqual(['limits_unavailable', 503, '1']);
      expect(limiter.stats().degraded.budget).toBe(1);
      await expect(limiter.usage(key)).rejects.toMatchObject({ code: 'limits_unavailable', status: 503 });
      fail = false;
      expect((await limiter.usage(key))).toMatchObject({ rpm: { used: 0 }, budget: { spentMicros: 0, heldMicros: 0 } });
    });

    it('makes no reservation and sends no headers for scopes without limits', async () => {
      const { limiter } = make();
      const r = await limiter.admit(request([scope({}), scope({}, 'project')], 10, 10));
      expect(r).toMatchObject({ ok: true, headers: {}, degraded: [] });
      if (r.ok) await limiter.settle(r.hold, { tokens: 1, costMicros: 1 });
    });

    it('refuses invalid limits and amounts with a message naming the field', async () => {
      const { limiter } = make();
      await expect(limiter.admit(request([scope({ rpm: -1 })]))).rejects.toThrow(/rpm must be a whole number/);
      await expect(limiter.admit(request([scope({ budget: { micros: 5, period: 'week' as 'day' } })]))).rejects.toThrow(/budget.period/);
      await expect(limiter.admit(request([scope({ tpm: 10 })], 1.5))).rejects.toThrow(/tokens/);
      await expect(limiter.admit(request([{ id: '', limits: { rpm: 1 } }]))).rejects.toThrow(/non-empty id/);
      const twice = scope({ rpm: 1 });
      await expect(limiter.admit(request([twice, twice]))).rejects.toThrow(/given twice/);
      await expect(limiter.usage(scope({ maxConcurrent: 0.5 }))).rejects.toThrow(/maxConcurrent/);
    });
  });
}
