/*
 * The schema exactly as round 1 created it (src/store/sqlite.ts, postgres.ts and the
 * media drivers before versioned migrations): the databases already deployed look like
 * this, with no schema_migrations table. Kept verbatim so the migration tests can build
 * such a database and check it is carried forward, not recreated.
 */

export const ROUND1_SQLITE = `
CREATE TABLE IF NOT EXISTS orgs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, balance_micros INTEGER NOT NULL CHECK (balance_micros >= 0),
  retention TEXT NOT NULL CHECK (retention IN ('standard','none')), created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), prefix TEXT NOT NULL UNIQUE, hash TEXT NOT NULL,
  created_at INTEGER NOT NULL, revoked_at INTEGER);
CREATE TABLE IF NOT EXISTS provider_keys (
  org_id TEXT NOT NULL REFERENCES orgs(id), provider_id TEXT NOT NULL, key TEXT NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, provider_id));
CREATE TABLE IF NOT EXISTS reservations (
  request_id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), amount_micros INTEGER NOT NULL,
  created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
  id INTEGER PRIMARY KEY AUTOINCREMENT, org_id TEXT NOT NULL REFERENCES orgs(id), request_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('credit','charge')), amount_micros INTEGER NOT NULL, note TEXT,
  created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS ledger_org ON ledger(org_id);
CREATE TABLE IF NOT EXISTS request_logs (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT, api_key_id TEXT, modality TEXT NOT NULL,
  requested_model TEXT, used_model TEXT, used_provider TEXT, status INTEGER NOT NULL, error_code TEXT,
  cost_micros INTEGER NOT NULL, cost_estimated INTEGER NOT NULL, byok INTEGER NOT NULL, duration_ms INTEGER NOT NULL,
  ttfb_ms INTEGER, prompt TEXT, attempts TEXT NOT NULL, extra TEXT, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS request_logs_org_time ON request_logs(org_id, modality, created_at);
CREATE TABLE IF NOT EXISTS media (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT NOT NULL, modality TEXT NOT NULL, model TEXT NOT NULL,
  used_model TEXT, used_provider TEXT, prompt TEXT, text TEXT, storage TEXT NOT NULL CHECK (storage IN ('s3','inline','none')),
  object_key TEXT, bytes INTEGER NOT NULL, mime_type TEXT NOT NULL, cost_micros INTEGER NOT NULL, error INTEGER NOT NULL,
  error_code TEXT, created_at INTEGER NOT NULL, expires_at INTEGER, cleaned_at INTEGER, meta TEXT);
CREATE INDEX IF NOT EXISTS media_org_time ON media(org_id, modality, created_at);
CREATE INDEX IF NOT EXISTS media_expiry ON media(expires_at) WHERE cleaned_at IS NULL AND storage = 's3';
CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL);
`;

export const ROUND1_POSTGRES = `
CREATE TABLE IF NOT EXISTS orgs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, balance_micros BIGINT NOT NULL CHECK (balance_micros >= 0),
  retention TEXT NOT NULL CHECK (retention IN ('standard','none')), created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), prefix TEXT NOT NULL UNIQUE, hash TEXT NOT NULL,
  created_at BIGINT NOT NULL, revoked_at BIGINT);
CREATE TABLE IF NOT EXISTS provider_keys (
  org_id TEXT NOT NULL REFERENCES orgs(id), provider_id TEXT NOT NULL, key TEXT NOT NULL, updated_at BIGINT NOT NULL,
  PRIMARY KEY (org_id, provider_id));
CREATE TABLE IF NOT EXISTS reservations (
  request_id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), amount_micros BIGINT NOT NULL,
  created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS reservations_created ON reservations(created_at);
CREATE TABLE IF NOT EXISTS ledger (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), request_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('credit','charge')), amount_micros BIGINT NOT NULL, note TEXT,
  created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ledger_org ON ledger(org_id);
CREATE TABLE IF NOT EXISTS request_logs (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT, api_key_id TEXT, modality TEXT NOT NULL,
  requested_model TEXT, used_model TEXT, used_provider TEXT, status INTEGER NOT NULL, error_code TEXT,
  cost_micros BIGINT NOT NULL, cost_estimated BOOLEAN NOT NULL, byok BOOLEAN NOT NULL, duration_ms INTEGER NOT NULL,
  ttfb_ms INTEGER, prompt TEXT, attempts JSON NOT NULL, extra JSON, created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS request_logs_org_time ON request_logs(org_id, modality, created_at);
CREATE TABLE IF NOT EXISTS media (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT NOT NULL, modality TEXT NOT NULL, model TEXT NOT NULL,
  used_model TEXT, used_provider TEXT, prompt TEXT, text TEXT, storage TEXT NOT NULL CHECK (storage IN ('s3','inline','none')),
  object_key TEXT, bytes BIGINT NOT NULL, mime_type TEXT NOT NULL, cost_micros BIGINT NOT NULL, error BOOLEAN NOT NULL,
  error_code TEXT, created_at BIGINT NOT NULL, expires_at BIGINT, cleaned_at BIGINT, meta JSON);
CREATE INDEX IF NOT EXISTS media_org_time ON media(org_id, modality, created_at);
CREATE INDEX IF NOT EXISTS media_expiry ON media(expires_at) WHERE cleaned_at IS NULL AND storage = 's3';
CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL);
`;
