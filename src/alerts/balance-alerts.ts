import { microsToUsd } from '../lib/money.js';
import type { SqlWebhookStore } from '../store/webhook-store.js';

/**
 * The balance alert (docs/limits.md, "Alerts"): `balance.below` when an org's balance is
 * below the amount it set, once per period. A period starts when the amount is set and
 * again when the balance is seen back at or above the amount after the alert fired (a
 * top-up), so each fall below the amount fires once.
 *
 * Checked by each instance's webhook delivery task (once a second): one query reads every
 * org that set an amount with its balance as written, charges included. (A check at the
 * settle would often miss the charge: on PostgreSQL it is written with the request's log
 * row, after the settle.) The crossing is an alert_events row unique per (org, `balance`,
 * 0, period start), so instances checking at once fire it once.
 */
export class BalanceAlerts {
  constructor(private readonly webhooks: SqlWebhookStore, private readonly now: () => number) {}

  /** Records the crossings found now; returns how many fired (the outbox delivers them). */
  async check(): Promise<number> {
    let fired = 0;
    for (const a of await this.webhooks.balanceAlerts()) {
      if (a.balanceMicros >= a.belowMicros) {
        if (a.firedEventId !== null) await this.webhooks.rearmBalanceAlert(a.orgId, a.since);
        continue;
      }
      if (a.firedEventId !== null) continue;
      const recorded = await this.webhooks.recordCrossing({
        orgId: a.orgId, scope: 'balance', threshold: 0, periodStart: a.since, type: 'balance.below',
        body: {
          type: 'balance.below', org: a.orgName, threshold: microsToUsd(a.belowMicros), balance: microsToUsd(a.balanceMicros),
          period: { kind: 'balance', start: new Date(a.since).toISOString(), end: null }, time: new Date(this.now()).toISOString(),
        },
      });
      if (recorded) fired++;
    }
    return fired;
  }
}
