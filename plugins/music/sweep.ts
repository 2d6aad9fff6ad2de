import { newId, type ObjectStore, type Store } from '../../src/sdk.js';
import type { MusicSettings } from './settings.js';

const DAY_MS = 86_400_000;
const BATCH = 200;
const LEASE = 'music-retention-sweep';

export interface SweepDeps {
  store: Store;
  objectStore: ObjectStore | undefined;
  settings: MusicSettings;
  now(): number;
}

/**
 * The retention sweep (spec §3): for hosted tracks past their expiry, delete the
 * object first, then mark the record cleaned, so a failed delete is retried at the
 * next run. A lease keeps it to one instance when several share the database. Prompt
 * and lyrics text stay unless `log_text_retention_days` is set.
 */
export function retentionSweep(deps: SweepDeps): () => Promise<string> {
  const holder = newId('sweeper');
  return async () => {
    const now = deps.now();
    const ttl = Math.max(deps.settings.sweep_interval_ms * 2, 60_000);
    if (!(await deps.store.leases.tryAcquire(LEASE, holder, ttl, now))) return 'another instance holds the sweep lease; skipped';
    try {
      let deleted = 0;
      let failed = 0;
      const seen = new Set<string>();
      for (;;) {
        const due = (await deps.store.media.listExpired(now, BATCH)).filter((r) => !seen.has(r.id));
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
      let cleared = 0;
      if (deps.settings.log_text_retention_days !== undefined) {
        cleared = await deps.store.media.clearText(now - deps.settings.log_text_retention_days * DAY_MS);
      }
      const text = deps.settings.log_text_retention_days !== undefined ? `, prompt/lyrics text cleared on ${cleared}` : '';
      return `deleted ${deleted} expired track(s)${failed ? `, ${failed} failed (retried next run)` : ''}${text}`;
    } finally {
      await deps.store.leases.release(LEASE, holder);
    }
  };
}
