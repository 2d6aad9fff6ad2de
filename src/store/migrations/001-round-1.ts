import type { Migration } from './migration.js';

/** Column types where the two databases spell the same column differently. */
interface Types {
  /** Money (micro-USD), epoch-millisecond times and byte counts: beyond 2^31. */
  bigint: string;
  bool: string;
  json: string;
  /** An auto-numbered primary key. */
  serial: string;
}

const SQLITE: Types = { bigint: 'INTEGER', bool: 'INTEGER', json: 'TEXT', serial: 'INTEGER PRIMARY KEY AUTOINCREMENT' };
/*
 * `attempts`, `extra` and `meta` are `json`, not `jsonb`: jsonb refuses the `\u0000`
 * escape, and one such string from a client would fail its log batch on every retry.
 */
const POSTGRES: Types = { bigint: 'BIGINT', bool: 'BOOLEAN', json: 'JSON', serial: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY' };

/*
 * The schema of round 1, as it was created before versioned migrations existed. Every
 * statement is IF NOT EXISTS, so a round-1 database (these tables present, no
 * schema_migrations) goes through this migration unchanged and is recorded at version
 * 1. Never edit it: a change is a new migration appended to the list.
 */
const round1 = (t: Types): string => `
CREATE TABLE IF NOT EXISTS orgs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, balance_micros ${t.bigint} NOT NULL CHECK (balance_micros >= 0),
  retention TEXT NOT NULL CHECK (retention IN ('standard','none')), created_at ${t.bigint} NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), prefix TEXT NOT NULL UNIQUE, hash TEXT NOT NULL,
  created_at ${t.bigint} NOT NULL, revoked_at ${t.bigint});
CREATE TABLE IF NOT EXISTS provider_keys (
  org_id TEXT NOT NULL REFERENCES orgs(id), provider_id TEXT NOT NULL, key TEXT NOT NULL, updated_at ${t.bigint} NOT NULL,
  PRIMARY KEY (org_id, provider_id));
CREATE TABLE IF NOT EXISTS reservations (
  request_id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), amount_micros ${t.bigint} NOT NULL,
  created_at ${t.bigint} NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
  id ${t.serial}, org_id TEXT NOT NULL REFERENCES orgs(id), request_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('credit','charge')), amount_micros ${t.bigint} NOT NULL, note TEXT,
  created_at ${t.bigint} NOT NULL);
CREATE INDEX IF NOT EXISTS ledger_org ON ledger(org_id);
CREATE TABLE IF NOT EXISTS request_logs (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT, api_key_id TEXT, modality TEXT NOT NULL,
  requested_model TEXT, used_model TEXT, used_provider TEXT, status INTEGER NOT NULL, error_code TEXT,
  cost_micros ${t.bigint} NOT NULL, cost_estimated ${t.bool} NOT NULL, byok ${t.bool} NOT NULL, duration_ms INTEGER NOT NULL,
  ttfb_ms INTEGER, prompt TEXT, attempts ${t.json} NOT NULL, extra ${t.json}, created_at ${t.bigint} NOT NULL);
CREATE INDEX IF NOT EXISTS request_logs_org_time ON request_logs(org_id, modality, created_at);
CREATE TABLE IF NOT EXISTS media (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT NOT NULL, modality TEXT NOT NULL, model TEXT NOT NULL,
  used_model TEXT, used_provider TEXT, prompt TEXT, text TEXT, storage TEXT NOT NULL CHECK (storage IN ('s3','inline','none')),
  object_key TEXT, bytes ${t.bigint} NOT NULL, mime_type TEXT NOT NULL, cost_micros ${t.bigint} NOT NULL, error ${t.bool} NOT NULL,
  error_code TEXT, created_at ${t.bigint} NOT NULL, expires_at ${t.bigint}, cleaned_at ${t.bigint}, meta ${t.json});
CREATE INDEX IF NOT EXISTS media_org_time ON media(org_id, modality, created_at);
CREATE INDEX IF NOT EXISTS media_expiry ON media(expires_at) WHERE cleaned_at IS NULL AND storage = 's3';
CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at ${t.bigint} NOT NULL);
`;

export const round1Schema: Migration = {
  version: 1,
  name: 'round-1 schema: orgs, keys, provider keys, reservations, ledger, request logs, media, leases',
  sql: {
    sqlite: round1(SQLITE),
    // Every PostgreSQL instance releases stale reservations by age at start; the SQLite server holds its reservations in memory.
    postgres: `${round1(POSTGRES)}CREATE INDEX IF NOT EXISTS reservations_created ON reservations(created_at);\n`,
  },
};
