import type { Store } from '../store/types.js';
import type { ObjectStore } from './object-store.js';

const BATCH = 200;

export interface MediaSweepDeps {
  store: Store;
  objectStore: ObjectStore | undefined;
  now(): number;
}

/**
 * Deletes the hosted bytes of one modality's records past their expiry: the object
 * first, then the record is marked cleaned, so a failed delete is retried at the next
 * run. Returns how many were deleted and how many failed.
 */
export async function deleteExpiredMedia(deps: MediaSweepDeps, modality: string): Promise<{ deleted: number; failed: number }> {
  const now = deps.now();
  let deleted = 0;
  let failed = 0;
  const seen = new Set<string>();
  for (;;) {
    const due = (await deps.store.media.listExpired(now, BATCH, modality)).filter((r) => !seen.has(r.id));
    if (due.length === 0) break;
    for (const r of due) {
      seen.add(r.id);
      try {
        if (!deps.objectStore || !r.objectKey) throw new Error('object storage is not configured');
        await deps.objectStore.delete(r.objectKey);
        await deps.store.media.markCleaned(r.id, deps.now());
        deleted++;
      } catch {
        failed++; // left uncleaned: the next run tries again
      }
    }
  }
  return { deleted, failed };
}

/**
 * Runs `work` under a named lease, so that among instances sharing a database one
 * runs it at a time; returns its summary, or says another instance holds the lease.
 */
export async function underLease(store: Store, name: string, holder: string, ttlMs: number, now: number, work: () => Promise<string>): Promise<string> {
  if (!(await store.leases.tryAcquire(name, holder, ttlMs, now))) return 'another instance holds the sweep lease; skipped';
  try {
    return await work();
  } finally {
    await store.leases.release(name, holder);
  }
}
