import type { Migration } from './migration.js';

/*
 * Alerts and signed webhooks (issue 32, docs/management.md "Webhooks").
 * - webhooks: an org's receivers; `secret` is sealed (src/lib/secrets.ts), never stored in clear.
 * - alert_events: one row per threshold crossing. The unique (org, scope, threshold,
 *   period start) is what makes a crossing fire once across any number of instances:
 *   each inserts with ON CONFLICT DO NOTHING and only the one whose row went in goes on.
 *   `fanned_out` = 0 until the delivery task wrote its outbox rows.
 * - webhook_deliveries: the durable outbox, one row per (event, webhook), claimed with a
 *   lease (`claimed_until`) by the delivery task and retried until delivered or expired.
 */
const sql = (bigint: string): string => `
CREATE TABLE webhooks (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), url TEXT NOT NULL, events TEXT NOT NULL,
  slack INTEGER NOT NULL DEFAULT 0, secret TEXT NOT NULL, created_at ${bigint} NOT NULL, created_by TEXT);
CREATE INDEX webhooks_org ON webhooks (org_id);
CREATE TABLE alert_events (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, scope TEXT NOT NULL, threshold INTEGER NOT NULL, period_start ${bigint} NOT NULL,
  type TEXT NOT NULL, payload TEXT NOT NULL, created_at ${bigint} NOT NULL, fanned_out INTEGER NOT NULL DEFAULT 0,
  UNIQUE (org_id, scope, threshold, period_start));
CREATE INDEX alert_events_pending ON alert_events (fanned_out, created_at);
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY, event_id TEXT NOT NULL, webhook_id TEXT NOT NULL, org_id TEXT NOT NULL, type TEXT NOT NULL,
  payload TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed')),
  attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at ${bigint} NOT NULL, claimed_until ${bigint},
  last_status INTEGER, last_error TEXT, created_at ${bigint} NOT NULL, delivered_at ${bigint},
  UNIQUE (event_id, webhook_id));
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
`;

export const webhooks: Migration = {
  version: 14,
  name: 'webhooks, alert events and the delivery outbox',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
