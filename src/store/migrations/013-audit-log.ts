import type { Migration } from './migration.js';

/*
 * The audit log (issue 32, docs/management.md "Audit log"): one row per change made
 * through the management API, the console or the CLI, and per sign-in and failed
 * sign-in. Append-only: rows are only inserted, and deleted by the retention sweep
 * (`audit.retention_days`); a trigger refuses any UPDATE, so not even a bug in the
 * gateway can rewrite what happened. `before_json`/`after_json` hold the changed fields,
 * secrets masked before they reach the database.
 */
const table = (bigint: string): string => `
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY, at ${bigint} NOT NULL, org_id TEXT,
  actor_type TEXT NOT NULL CHECK (actor_type IN ('user','token','cli','anonymous')),
  actor_id TEXT, actor_email TEXT, token_id TEXT, ip TEXT, user_agent TEXT,
  action TEXT NOT NULL, target_type TEXT, target_id TEXT, before_json TEXT, after_json TEXT);
CREATE INDEX audit_log_org ON audit_log (org_id, at, id);
CREATE INDEX audit_log_at ON audit_log (at, id);
`;

export const auditLog: Migration = {
  version: 13,
  name: 'audit log',
  sql: {
    sqlite: `${table('INTEGER')}
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;`,
    postgres: `${table('BIGINT')}
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();`,
  },
};
