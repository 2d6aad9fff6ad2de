import type { Migration } from './migration.js';

/*
 * Organizations → projects → keys, console users, and what the management API reads.
 *
 * - Every org gets a project named `default`; existing keys and request-log rows move
 *   into it. Its id is derived from the org's (`prj_` + the org id's random part), so
 *   the backfill is one statement and the same on every instance.
 * - Log rows gain `project_id` and their token counts (backfilled from the chat plugin's
 *   `extra.usage`), so lists and usage sums read columns, not JSON.
 * - The log indexes serve the keyset pagination (created_at desc, request_id desc) per
 *   org, project, key, model and for errors; the round-1 (org, modality, time) index,
 *   which no query uses, is dropped so that a log write maintains one index less.
 * - Provider keys gain `key_version` (NULL: the plaintext of round 1, sealed with
 *   AES-256-GCM by the gateway at its next start) and `masked` (what lists show).
 * - `usage_hourly` holds each org's sums per hour, project, key and model, written in
 *   the transaction that writes the log rows (PostgreSQL: triggers, whatever code
 *   writes the rows; SQLite: the store's log-batch write), so usage over a month reads
 *   hundreds of rows instead of millions and still equals the log exactly. A log row
 *   rewritten in place (same request id) moves its contribution; rows are never
 *   deleted (a future deletion must adjust the sums too). NULL project, key or model
 *   are stored as '' (a key column cannot hold NULL).
 */

const USAGE_TABLE = (bigint: string): string => `
CREATE TABLE usage_hourly (
  org_id TEXT NOT NULL, hour ${bigint} NOT NULL, project_id TEXT NOT NULL, api_key_id TEXT NOT NULL, model TEXT NOT NULL,
  requests ${bigint} NOT NULL, errors ${bigint} NOT NULL, cost_micros ${bigint} NOT NULL, prompt_tokens ${bigint} NOT NULL,
  completion_tokens ${bigint} NOT NULL,
  PRIMARY KEY (org_id, hour, project_id, api_key_id, model));
INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens, completion_tokens)
  SELECT org_id, (created_at / 3600000) * 3600000, COALESCE(project_id, ''), COALESCE(api_key_id, ''), COALESCE(requested_model, ''),
    COUNT(*), SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), SUM(cost_micros), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
  FROM request_logs WHERE org_id IS NOT NULL GROUP BY 1, 2, 3, 4, 5;
`;

/** The bucket a row (NEW or OLD) counts in, and what it adds. */
const bucket = (r: string): string => `${r}.org_id, (${r}.created_at / 3600000) * 3600000, COALESCE(${r}.project_id, ''), COALESCE(${r}.api_key_id, ''),
  COALESCE(${r}.requested_model, '')`;
const ADD = `ON CONFLICT (org_id, hour, project_id, api_key_id, model) DO UPDATE SET requests = usage_hourly.requests + excluded.requests,
  errors = usage_hourly.errors + excluded.errors, cost_micros = usage_hourly.cost_micros + excluded.cost_micros,
  prompt_tokens = usage_hourly.prompt_tokens + excluded.prompt_tokens, completion_tokens = usage_hourly.completion_tokens + excluded.completion_tokens`;

/*
 * SQLite: the server writes the sums in its log-batch transaction (src/store/usage-rollup.ts):
 * a trigger there would put every row insert under a statement journal and triple what
 * a log row costs to write.
 */
const SQLITE_USAGE = USAGE_TABLE('INTEGER');

/*
 * PostgreSQL: one statement trigger per INSERT adds the batch in one grouped upsert
 * (buckets in key order, so concurrent writers lock them in the same order); an
 * INSERT … ON CONFLICT DO UPDATE that rewrites a row fires the row UPDATE trigger,
 * which moves that row's contribution. Updates of other columns (clearing prompt text)
 * fire nothing.
 */
const POSTGRES_USAGE = `${USAGE_TABLE('BIGINT')}
CREATE FUNCTION tollgate_usage_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens, completion_tokens)
    SELECT ${bucket('n')}, COUNT(*), COUNT(*) FILTER (WHERE n.status >= 400), SUM(n.cost_micros), COALESCE(SUM(n.prompt_tokens), 0),
      COALESCE(SUM(n.completion_tokens), 0)
    FROM added_rows n WHERE n.org_id IS NOT NULL GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
  ${ADD};
  RETURN NULL;
END $$;
CREATE TRIGGER request_logs_usage_insert AFTER INSERT ON request_logs REFERENCING NEW TABLE AS added_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tollgate_usage_added();
CREATE FUNCTION tollgate_usage_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.org_id IS NOT NULL THEN
    UPDATE usage_hourly SET requests = requests - 1, errors = errors - (OLD.status >= 400)::int, cost_micros = cost_micros - OLD.cost_micros,
      prompt_tokens = prompt_tokens - COALESCE(OLD.prompt_tokens, 0), completion_tokens = completion_tokens - COALESCE(OLD.completion_tokens, 0)
    WHERE (org_id, hour, project_id, api_key_id, model) = (${bucket('OLD')});
  END IF;
  IF NEW.org_id IS NOT NULL THEN
    INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens, completion_tokens)
      VALUES (${bucket('NEW')}, 1, (NEW.status >= 400)::int, NEW.cost_micros, COALESCE(NEW.prompt_tokens, 0), COALESCE(NEW.completion_tokens, 0)) ${ADD};
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER request_logs_usage_update
  AFTER UPDATE OF org_id, project_id, api_key_id, requested_model, status, cost_micros, prompt_tokens, completion_tokens, created_at
  ON request_logs FOR EACH ROW EXECUTE FUNCTION tollgate_usage_rewritten();
`;

const common = (t: { bigint: string; bool: string }): string => `
CREATE TABLE projects (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), name TEXT NOT NULL, created_at ${t.bigint} NOT NULL,
  UNIQUE (org_id, name));
INSERT INTO projects (id, org_id, name, created_at) SELECT 'prj_' || substr(id, 5), id, 'default', created_at FROM orgs;

ALTER TABLE api_keys ADD COLUMN project_id TEXT REFERENCES projects(id);
ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN expires_at ${t.bigint};
ALTER TABLE api_keys ADD COLUMN allowed_models TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at ${t.bigint};
ALTER TABLE api_keys ADD COLUMN created_by TEXT;
UPDATE api_keys SET project_id = 'prj_' || substr(org_id, 5);
CREATE INDEX api_keys_org_time ON api_keys(org_id, created_at);
CREATE INDEX api_keys_project ON api_keys(project_id);

CREATE TABLE users (
  id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL, operator ${t.bool} NOT NULL,
  created_at ${t.bigint} NOT NULL);
CREATE TABLE memberships (
  org_id TEXT NOT NULL REFERENCES orgs(id), user_id TEXT NOT NULL REFERENCES users(id),
  role TEXT NOT NULL CHECK (role IN ('owner','admin','member')), created_at ${t.bigint} NOT NULL,
  PRIMARY KEY (org_id, user_id));
CREATE INDEX memberships_user ON memberships(user_id);
CREATE TABLE sessions (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id), created_at ${t.bigint} NOT NULL,
  expires_at ${t.bigint} NOT NULL);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expiry ON sessions(expires_at);
CREATE TABLE mgmt_tokens (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id), name TEXT NOT NULL, prefix TEXT NOT NULL UNIQUE,
  hash TEXT NOT NULL, created_at ${t.bigint} NOT NULL, last_used_at ${t.bigint}, revoked_at ${t.bigint});
CREATE INDEX mgmt_tokens_user ON mgmt_tokens(user_id);

ALTER TABLE ledger ADD COLUMN created_by TEXT;
CREATE INDEX ledger_org_credits ON ledger(org_id, id) WHERE kind = 'credit';

ALTER TABLE provider_keys ADD COLUMN key_version INTEGER;
ALTER TABLE provider_keys ADD COLUMN masked TEXT;
ALTER TABLE provider_keys ADD COLUMN updated_by TEXT;

ALTER TABLE request_logs ADD COLUMN project_id TEXT;
ALTER TABLE request_logs ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE request_logs ADD COLUMN completion_tokens INTEGER;
DROP INDEX IF EXISTS request_logs_org_time;
CREATE INDEX request_logs_org_recent ON request_logs(org_id, created_at, request_id);
CREATE INDEX request_logs_project_recent ON request_logs(project_id, created_at, request_id);
CREATE INDEX request_logs_key_recent ON request_logs(api_key_id, created_at, request_id);
CREATE INDEX request_logs_model_recent ON request_logs(org_id, requested_model, created_at, request_id);
CREATE INDEX request_logs_errors_recent ON request_logs(org_id, created_at, request_id) WHERE status >= 400;
`;

/** Chat rows of round 1 carry their billed tokens in `extra.usage`; a value that is not a whole number stays NULL. */
const SQLITE_BACKFILL = `
UPDATE request_logs SET
  project_id = CASE WHEN org_id IS NULL THEN NULL ELSE 'prj_' || substr(org_id, 5) END,
  prompt_tokens = CASE WHEN json_valid(extra) AND typeof(json_extract(extra, '$.usage.prompt_tokens')) = 'integer'
    THEN json_extract(extra, '$.usage.prompt_tokens') END,
  completion_tokens = CASE WHEN json_valid(extra) AND typeof(json_extract(extra, '$.usage.completion_tokens')) = 'integer'
    THEN json_extract(extra, '$.usage.completion_tokens') END;
`;

const POSTGRES_BACKFILL = `
ALTER TABLE api_keys ALTER COLUMN project_id SET NOT NULL;
UPDATE request_logs SET
  project_id = CASE WHEN org_id IS NULL THEN NULL ELSE 'prj_' || substr(org_id, 5) END,
  prompt_tokens = CASE WHEN extra->'usage'->>'prompt_tokens' ~ '^[0-9]{1,9}$' THEN (extra->'usage'->>'prompt_tokens')::int END,
  completion_tokens = CASE WHEN extra->'usage'->>'completion_tokens' ~ '^[0-9]{1,9}$' THEN (extra->'usage'->>'completion_tokens')::int END
  WHERE org_id IS NOT NULL OR extra IS NOT NULL;
`;

export const tenancySchema: Migration = {
  version: 3,
  name: 'tenancy: projects (a default one per org), users, memberships, sessions, management tokens, key constraints, log columns and indexes, hourly usage',
  sql: {
    sqlite: common({ bigint: 'INTEGER', bool: 'INTEGER' }) + SQLITE_BACKFILL + SQLITE_USAGE,
    postgres: common({ bigint: 'BIGINT', bool: 'BOOLEAN' }) + POSTGRES_BACKFILL + POSTGRES_USAGE,
  },
};
