import type { Migration } from './migration.js';

/*
 * Guardrails and logged bodies (issue 34, docs/guardrails.md):
 * - `projects.guardrails` (JSON array) and `projects.body_logging` (JSON object): NULL is
 *   none and off.
 * - `request_logs.guardrails`: the request's verdicts (JSON: guardrail, stage, action,
 *   categories, count — never a matched value).
 * - `request_bodies`: the request and response bodies of projects that log them, in a
 *   table of their own so the log list's rows stay small; `expires_at` is when the
 *   `request-bodies-retention` task deletes them (the log row and its cost stay).
 */
const sql = (bigint: string): string => `
ALTER TABLE projects ADD COLUMN guardrails TEXT;
ALTER TABLE projects ADD COLUMN body_logging TEXT;
ALTER TABLE request_logs ADD COLUMN guardrails TEXT;
CREATE TABLE request_bodies (
  request_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  created_at ${bigint} NOT NULL,
  expires_at ${bigint} NOT NULL,
  request TEXT,
  response TEXT,
  truncated ${bigint === 'BIGINT' ? 'BOOLEAN' : 'INTEGER'} NOT NULL
);
CREATE INDEX request_bodies_expiry ON request_bodies (expires_at);
`;

export const guardrails: Migration = {
  version: 19,
  name: 'project guardrails and body logging, verdicts in the log, request bodies',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
