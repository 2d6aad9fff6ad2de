import type { Migration } from './migration.js';

/*
 * The balance alert of an org (issue 32, docs/limits.md "Alerts"):
 * - `orgs.balance_alert_micros`: `balance.below` fires when the org's balance is below
 *   this amount (NULL: no balance alert).
 * - `orgs.balance_alert_since`: the start of the alert's current period (ms). The crossing
 *   is the alert_events row (org, scope `balance`, threshold 0, period_start = since), so it
 *   fires once per period across every instance; setting the amount, or the balance seen
 *   back at or above it after a crossing, starts a new period.
 */
const sql = (bigint: string): string => `
ALTER TABLE orgs ADD COLUMN balance_alert_micros ${bigint};
ALTER TABLE orgs ADD COLUMN balance_alert_since ${bigint};
`;

export const balanceAlert: Migration = {
  version: 16,
  name: 'balance alert amount and period per org',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
