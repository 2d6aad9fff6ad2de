import type { Migration } from './migration.js';

/*
 * Limits and budgets (docs/limits.md) on API keys and on projects. Every column is
 * nullable and NULL means "no limit", so an existing database is carried forward as it
 * was: no key or project is limited until someone sets a limit. A budget is its amount
 * and its period together (both or neither: a constraint on PostgreSQL, the store's one write on both).
 *
 * The budget seed sums the request log per key and per project since a period start;
 * the indexes `request_logs_key_recent (api_key_id, created_at, …)` and
 * `request_logs_project_recent (project_id, created_at, …)` of migration 3 already serve
 * that range, so no index is added (one index less to maintain per log row).
 */
const columns = (table: string, bigint: string): string => `
ALTER TABLE ${table} ADD COLUMN limit_rpm INTEGER CHECK (limit_rpm >= 0);
ALTER TABLE ${table} ADD COLUMN limit_tpm ${bigint} CHECK (limit_tpm >= 0);
ALTER TABLE ${table} ADD COLUMN limit_concurrent INTEGER CHECK (limit_concurrent >= 0);
ALTER TABLE ${table} ADD COLUMN budget_micros ${bigint} CHECK (budget_micros >= 0);
ALTER TABLE ${table} ADD COLUMN budget_period TEXT CHECK (budget_period IN ('day', 'month', 'total'));
`;

/** PostgreSQL can add the "both or neither" rule as a table constraint; SQLite cannot add one to an existing table. */
const pair = (table: string): string => `
ALTER TABLE ${table} ADD CONSTRAINT ${table}_budget_pair CHECK ((budget_micros IS NULL) = (budget_period IS NULL));
`;

export const limitsSchema: Migration = {
  version: 5,
  name: 'limits: rpm, tpm, concurrency and a USD budget per API key and per project',
  sql: {
    sqlite: columns('api_keys', 'INTEGER') + columns('projects', 'INTEGER'),
    postgres: columns('api_keys', 'BIGINT') + columns('projects', 'BIGINT') + pair('api_keys') + pair('projects'),
  },
};
