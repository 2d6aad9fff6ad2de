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
 * The retention sweep (spec §3): for hosted tracks past their expiry, delete the
 * object first, then mark the record cleaned, so a failed delete is retried at the
 * next run. A lease keeps it to one instance when several share the database. Prompt
 * and lyrics text stay unless `log_text_retention_days` is set.
 */
export function retentionSweep(deps: SweepDeps): () => Promise<string> {
  const holder = newId('sweeper');
  return () => {
    const now = deps.now();
    const ttl = Math.max(deps.settings.sweep_interval_ms * 2, 60_000);
    return underLease(deps.store, LEASE, holder, ttl, now, async () => {
      const { deleted, failed } = await deleteExpiredMedia(deps, 'music');
      let cleared = 0;
      if (deps.settings.log_text_retention_days !== undefined) {
        cleared = await deps.store.media.clearText(now - deps.settings.log_text_retention_days * DAY_MS);
      }
      const text = deps.settings.log_text_retention_days !== undefined ? `, prompt/lyrics text cleared on ${cleared}` : '';
      return `deleted ${deleted} expired track(s)${failed ? `, ${failed} failed (retried next run)` : ''}${text}`;
    });
  };
}
