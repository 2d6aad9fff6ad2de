import type { Migration } from './migration.js';

/*
 * How a key's or project's limits are counted across instances (issue 36, docs/limits.md
 * "Exact and lease mode"): `exact` (one Redis script per request) or `lease` (each
 * instance leases a share). NULL (every existing row): the rule decides, which keeps
 * small limits exact.
 */
const column = (table: string): string => `ALTER TABLE ${table} ADD COLUMN limit_mode TEXT CHECK (limit_mode IN ('exact', 'lease'));\n`;

export const limitMode: Migration = {
  version: 20,
  name: 'limits: exact or lease mode per API key and per project',
  sql: column('api_keys') + column('projects'),
};
