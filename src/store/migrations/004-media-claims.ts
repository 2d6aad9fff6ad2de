import type { Migration } from './migration.js';

/*
 * The retention sweep claims each expired object before deleting it (issue 14): an
 * instance sets `claimed_until` on a record still uncleaned and unclaimed (or whose
 * claim ran out: the claimer crashed), deletes the object, then sets `cleaned_at`. Two
 * instances never delete one object, and a crash between claim and delete leaves the
 * record to be claimed again once its claim runs out, rather than an object never deleted.
 */
export const mediaClaims: Migration = {
  version: 4,
  name: 'media.claimed_until: the retention sweep claims each object before deleting it',
  sql: {
    sqlite: 'ALTER TABLE media ADD COLUMN claimed_until INTEGER;\n',
    postgres: 'ALTER TABLE media ADD COLUMN IF NOT EXISTS claimed_until BIGINT;\n',
  },
};
