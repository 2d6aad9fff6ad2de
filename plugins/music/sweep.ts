import { deleteExpiredMedia, newId, type ObjectStore, type Store, underLease } from '../../src/sdk.js';
import type { MusicSettings } from './settings.js';

const DAY_MS = 86_400_000;
const LEASE = 'music-retention-sweep';

export interface SweepDeps {
  store: Store;
  objectStore: ObjectStore | undefined;
  settings: MusicSettings;
  now(): number;
}

/**
 * The retention sweep (spec §3): each hosted track past its expiry is claimed, its
 * object deleted, then the record marked cleaned; a failed delete is retried at the
 * next run. A lease, renewed while the run lasts, keeps it to one instance when several
 * share the database, and the claims keep each object to one delete even if two runs
 * overlap. Prompt and lyrics text stay unless `log_text_retention_days` is set.
 */
export function retentionSweep(deps: SweepDeps): () => Promise<string> {
  const holder = newId('sweeper');
  return () => {
    const now = deps.now();
    return underLease(deps.store, LEASE, holder, deps.settings.sweep_interval_ms * 2, deps.now, async (signal) => {
      const { deleted, failed } = await deleteExpiredMedia(deps, 'music', { signal });
      let cleared = 0;
      if (deps.settings.log_text_retention_days !== undefined) {
        cleared = await deps.store.media.clearText(now - deps.settings.log_text_retention_days * DAY_MS);
      }
      const text = deps.settings.log_text_retention_days !== undefined ? `, prompt/lyrics text cleared on ${cleared}` : '';
      return `deleted ${deleted} expired track(s)${failed ? `, ${failed} failed (retried next run)` : ''}${text}`;
    });
  };
}
