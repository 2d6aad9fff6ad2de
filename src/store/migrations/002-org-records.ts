import type { Migration } from './migration.js';

const table = (bigint: string): string => `
CREATE TABLE IF NOT EXISTS org_records (
  kind TEXT NOT NULL, id TEXT NOT NULL, org_id TEXT NOT NULL, data TEXT NOT NULL,
  created_at ${bigint} NOT NULL, expires_at ${bigint} NOT NULL, PRIMARY KEY (kind, id));
CREATE INDEX IF NOT EXISTS org_records_org ON org_records(kind, org_id, created_at);
CREATE INDEX IF NOT EXISTS org_records_expiry ON org_records(expires_at);
`;

/**
 * Org-scoped JSON records plugins keep for a while (stored Responses API responses).
 * `data` is JSON text, not jsonb: jsonb refuses the `\u0000` escape a client may send.
 */
export const orgRecords: Migration = {
  version: 2,
  name: 'org_records: org-scoped JSON records with an expiry (stored Responses API responses)',
  sql: { sqlite: table('INTEGER'), postgres: table('BIGINT') },
};
