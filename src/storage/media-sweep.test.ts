import { afterEach, describe, expect, it, vi } from 'vitest';
import { openStore } from '../store/index.js';
import { TaskRunner } from '../http/tasks.js';
import { LEASE_HELD_ELSEWHERE, underLease } from './media-sweep.js';

/* The sweep's lease renewed while a run lasts, and the task runner reporting each run once. Fake timers, a hand-moved clock. */

afterEach(() => {
  vi.useRealTimers();
});

describe('underLease', () => {
  it('renews the lease while the work lasts past its TTL, so no other holder gets it; releases it at the end', async () => {
    vi.useFakeTimers();
    const store = openStore('sqlite::memory:');
    let clock = 1_000_000;
    const now = (): number => clock;
    const summary = await underLease(store, 'sweep', 'a', 300, now, async (signal) => {
      for (let i = 0; i < 6; i++) {
        clock += 100;
        await vi.advanceTimersByTimeAsync(100); // a renewal every 100 ms (a third of the TTL)
        expect(await store.leases.tryAcquire('sweep', 'b', 300, clock)).toBe(false);
      }
      expect(signal.aborted).toBe(false);
      return 'swept';
    });
    expect(summary).toBe('swept'); // 600 ms of work on a 300 ms lease
    expect(await store.leases.tryAcquire('sweep', 'b', 300, clock)).toBe(true);
    expect(await underLease(store, 'sweep', 'a', 300, now, async () => 'never')).toBe(LEASE_HELD_ELSEWHERE);
    await store.close();
  });

  it('stops the work when a renewal finds the lease taken (the process stalled past the TTL)', async () => {
    vi.useFakeTimers();
    const store = openStore('sqlite::memory:');
    let clock = 1_000_000;
    const summary = await underLease(store, 'sweep', 'a', 300, () => clock, async (signal) => {
      clock += 301; // stalled: no renewal ran, the lease expired, another instance took it
      expect(await store.leases.tryAcquire('sweep', 'b', 300, clock)).toBe(true);
      await vi.advanceTimersByTimeAsync(100);
      expect(signal.aborted).toBe(true);
      return 'deleted 3';
    });
    expect(summary).toBe('deleted 3 (the lease was lost mid-run; the rest is left to the next run)');
    expect(await store.leases.tryAcquire('sweep', 'a', 300, clock)).toBe(false); // still b's: not released by a
    await store.close();
  });
});

describe('TaskRunner', () => {
  it('skips the ticks that find the last run still going, so a long run is reported once', async () => {
    vi.useFakeTimers();
    const results: string[] = [];
    const runner = new TaskRunner((task, r) => results.push(`${task}: ${r instanceof Error ? r.message : r}`));
    let finish: (s: string) => void = () => undefined;
    let runs = 0;
    runner.add({ name: 'sweep', intervalMs: 1000, run: () => new Promise<string>((resolve) => { runs++; finish = resolve; }) });
    runner.start();
    await vi.advanceTimersByTimeAsync(3500); // ticks at 1, 2 and 3 s: one run, still going
    expect(runs).toBe(1);
    finish('deleted 8');
    await vi.advanceTimersByTimeAsync(0);
    expect(results).toEqual(['sweep: deleted 8']);
    await vi.advanceTimersByTimeAsync(1000); // the next tick starts a new run
    expect(runs).toBe(2);
    finish('deleted 0');
    await runner.stop();
    expect(results).toEqual(['sweep: deleted 8', 'sweep: deleted 0']);
  });
});
