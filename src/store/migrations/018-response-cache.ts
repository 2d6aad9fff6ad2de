import type { Migration } from './migration.js';

/*
 * The response cache (issue 33, docs/cache.md):
 * - `projects.cache`, `api_keys.cache`: the cache setting (JSON text: mode, ttl_s, scope,
 *   hit_price, max_temperature, cache_all, threshold); NULL: none (off, unless the key's
 *   project turns it on).
 * - `request_logs.cache`: hit, miss or bypass (NULL: the cache was off for the request);
 *   `cache_age_ms`: a hit's entry age; `cache_saved_micros`: the original cost less what the
 *   hit was charged. An index serves the console's hit rate and savings per project and day.
 */
const sql = (bigint: string): string => `
ALTER TABLE projects ADD COLUMN cache TEXT;
ALTER TABLE api_keys ADD COLUMN cache TEXT;
ALTER TABLE request_logs ADD COLUMN cache TEXT CHECK (cache IN ('hit', 'miss', 'bypass'));
ALTER TABLE request_logs ADD COLUMN cache_age_ms ${bigint};
ALTER TABLE request_logs ADD COLUMN cache_saved_micros ${bigint};
CREATE INDEX IF NOT EXISTS request_logs_cache_by_project ON request_logs (project_id, created_at) WHERE cache IS NOT NULL;
`;

export const responseCache: Migration = {
  version: 18,
  name: 'response cache: settings of projects and keys, cache result, age and saving per log row',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
