import type { Store } from '../store/types.js';
import type { ObjectStore } from './object-store.js';

const BATCH = 200;
/** Default claim: far longer than one object's delete takes, short enough that a crashed claimer's record is soon retried. */
const CLAIM_TTL_MS = 10 * 60 * 1000;

export interface MediaSweepDeps {
  store: Store;
  objectStore: ObjectStore | undefined;
  now(): number;
}

export interface MediaSweepOptions {
  /** Set when this run should stop (its lease was lost): the records not yet claimed are left to the next run. */
  signal?: AbortSignal;
  /** How long a claim keeps other sweeps off a record: past it, a crashed claimer's record is claimed again (default 10 min). */
  claimTtlMs?: number;
}

/**
 * Deletes the hosted bytes of one modality's records past their expiry. Each record is
 * claimed first (UPDATE … WHERE cleaned_at IS NULL AND no live claim … RETURNING), so
 * that of several sweeps — instances, or `gateway sweep` beside a server — exactly one
 * deletes each object; then the object is deleted and the record marked cleaned. A
 * failed delete gives the claim up, so the next run tries again. Returns how many were
 * deleted and how many failed.
 */
export async function deleteExpiredMedia(deps: MediaSweepDeps, modality: string, opts: MediaSweepOptions = {}): Promise<{ deleted: number; failed: number }> {
  const now = deps.now();
  let deleted = 0;
  let failed = 0;
  const seen = new Set<string>();
  for (;;) {
    const due = (await deps.store.media.listExpired(now, BATCH, modality)).filter((r) => !seen.has(r.id));
    if (due.length === 0) break;
    for (const r of due) {
      if (opts.signal?.aborted) return { deleted, failed };
      seen.add(r.id);
      const t = deps.now();
      const claimed = await deps.store.media.claim(r.id, t, t + (opts.claimTtlMs ?? CLAIM_TTL_MS));
      if (!claimed) continue; // another sweep has it, or has already deleted it
      try {
        if (!deps.objectStore || !claimed.objectKey) throw new Error('object storage is not configured');
        await deps.objectStore.delete(claimed.objectKey);
      } catch {
        failed++;
        await deps.store.media.unclaim(r.id); // left uncleaned: the next run tries again
        continue;
      }
      await deps.store.media.markCleaned(r.id, deps.now());
      deleted++;
    }
  }
  return { deleted, failed };
}

/** What `underLease` returns when another instance holds the lease (the gateway logs it at debug level only). */
export const LEASE_HELD_ELSEWHERE = 'another instance holds the sweep lease; skipped';

/**
 * Runs `work` under a named lease, so that among instances sharing a database one runs
 * it at a time. The lease is taken for `ttlMs` and renewed every third of it while the
 * work lasts, however long that is; if a renewal finds the lease taken (this process
 * stalled past the TTL), `signal` aborts the work, which stops at its next step.
 * Returns the work's summary, or LEASE_HELD_ELSEWHERE.
 */
export async function underLease(store: Store, name: string, holder: string, ttlMs: number, now: () => number, work: (signal: AbortSignal) => Promise<string>): Promise<string> {
  if (!(await store.leases.tryAcquire(name, holder, ttlMs, now()))) return LEASE_HELD_ELSEWHERE;
  const lost = new AbortController();
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = renewing.then(async () => {
      if (lost.signal.aborted) return;
      try {
        if (!(await store.leases.tryAcquire(name, holder, ttlMs, now()))) lost.abort();
      } catch {
        // The database did not answer: keep going while the lease may still be ours; the claims keep deletions single.
      }
    });
  }, Math.max(1, Math.floor(ttlMs / 3)));
  timer.unref();
  try {
    const summary = await work(lost.signal);
    return lost.signal.aborted ? `${summary} (the lease was lost mid-run; the rest is left to the next run)` : summary;
  } finally {
    clearInterval(timer);
    await renewing;
    if (!lost.signal.aborted) await store.leases.release(name, holder);
  }
}
