import type { Migration } from './migration.js';

/*
 * The Overview counts the month's failures by error code, so that the gateway's own
 * refusals (rate limits, budgets, credits) stand apart from upstream and other errors
 * (docs/console.md). Error rows are few: a partial index that covers the code answers the
 * count from the index alone; request_logs_errors_recent has no code, so the count read
 * every error row of the month from the table.
 */
export const errorCodesIndex: Migration = {
  version: 21,
  name: 'request log: partial index of errors by org, time and code (the Overview\'s refusals apart)',
  sql: 'CREATE INDEX IF NOT EXISTS request_logs_error_codes ON request_logs (org_id, created_at, error_code) WHERE status >= 400;',
};
