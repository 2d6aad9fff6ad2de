import type { Migration } from './migration.js';

/*
 * The budget seed (`spentSince`, src/store/limits-store.ts) sums a key's or a project's
 * hourly costs since a period start. usage_hourly's primary key starts with the org, so
 * without these it read every hour of every key, project and model of the org for the
 * period; with them it reads that key's or project's hours only.
 */
const SQL = `
CREATE INDEX usage_hourly_key ON usage_hourly (api_key_id, hour);
CREATE INDEX usage_hourly_project ON usage_hourly (project_id, hour);
`;

export const usageIndexes: Migration = {
  version: 8,
  name: 'usage_hourly indexes by key and by project',
  sql: SQL,
};
