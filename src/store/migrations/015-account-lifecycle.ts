import type { Migration } from './migration.js';

/*
 * The account lifecycle (issue 32, docs/management.md "Account lifecycle"):
 * - `users.deactivated_at`: set while an operator has deactivated the user (NULL: active).
 *   Their sessions are deleted when it is set, and their management tokens and any
 *   sign-in are refused while it stays set.
 * - `api_keys.previous_hash` / `previous_expires_at`: a rotated key's old secret (its
 *   SHA-256) and when it stops being accepted (ms). The key keeps its id and prefix; only
 *   the secret after the prefix changes, so lookups by prefix find both secrets' row.
 */
const sql = (bigint: string): string => `
ALTER TABLE users ADD COLUMN deactivated_at ${bigint};
ALTER TABLE api_keys ADD COLUMN previous_hash TEXT;
ALTER TABLE api_keys ADD COLUMN previous_expires_at ${bigint};
`;

export const accountLifecycle: Migration = {
  version: 15,
  name: 'user deactivation and key rotation',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
