import { describe, expect, it } from 'vitest';
import { FakeClock, limiterContract, request, scope } from './contract.testkit.js';
import { createLimiter } from './index.js';
import { MemoryLimiter } from './memory.js';

limiterContract('in-process', () => ({
  make: (opts) => new MemoryLimiter(opts),
  teardown: async () => undefined,
}));

describe('createLimiter without Redis', () => {
  it('picks the in-process driver on the given clock', async () => {
    const clock = new FakeClock(Date.UTC(2025, 5, 1));
    const limiter = createLimiter({ seed: async () => 0, now: clock.now });
    expect(limiter.stats()).toEqual({ driver: 'memory', degraded: { rpm: 0, tpm: 0, concurrency: 0, budget: 0 }, pendingReplays: 0 });
    const key = scope({ rpm: 1 });
    expect((await limiter.admit(request([key]))).ok).toBe(true);
    expect((await limiter.admit(request([key]))).ok).toBe(false);
    clock.advance(60_000);
    expect((await limiter.admit(request([key]))).ok).toBe(true);
  });

  it('stays exact over many windows of pruning: 100 per sliding minute, in bursts', async () => {
    const clock = new FakeClock(Date.UTC(2025, 5, 1));
    const limiter = new MemoryLimiter({ seed: async () => 0, now: clock.now });
    const key = scope({ rpm: 100, tpm: 1000 });
    let admitted = 0;
    for (let i = 0; i < 5000; i++) {
      const r = await limiter.admit(request([key], 5));
      if (r.ok) {
        admitted++;
        await limiter.settle(r.hold, { tokens: 5, costMicros: 0 });
      }
      clock.advance(100); // 600 attempts a minute against 100 rpm
    }
    // Bursts of 100 at 0 s, 60 s, … 480 s: the oldest leaves exactly 60 s after it came.
    expect(admitted).toBe(900);
    expect((await limiter.usage(key)).rpm?.used).toBe(100);
  });
});
