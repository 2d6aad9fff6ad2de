import { periodBounds } from '../model/periods.js';
import type { Limiter, LimitScope } from '../model/limits.js';
import { microsToUsd, type Micros } from '../lib/money.js';
import type { SqlWebhookStore } from '../store/webhook-store.js';

/** The default thresholds of every budget, in percent of the period's budget (`webhooks.budget_thresholds`; docs/limits.md, "Alerts"). */
const BUDGET_THRESHOLDS: readonly number[] = [50, 80, 100];

/** Crossings this instance remembers as recorded; past it the memory starts over (a few extra inserts, which find the row). */
const MAX_REMEMBERED = 10_000;

/** What a settled request names: its org, key and project (the pipeline's exchange). */
export interface AlertSubject {
  org: { id: string; name: string } | undefined;
  apiKey: { id: string; prefix: string } | undefined;
  project: { id: string; name: string } | undefined;
}

/**
 * Budget thresholds (by default 50, 80 and 100 % of a key's or a project's budget this period),
 * checked after each settle that spent something on a budget scope: the spend is read
 * from the limits engine (one peek, the same store the budget is counted in), and each
 * threshold it has reached is recorded with an INSERT that only one caller of all
 * instances wins (`alert_events`, unique per org, scope, threshold and period start).
 * The winner's event goes out through the outbox (WebhookDeliverer). A crossing this
 * instance already saw recorded costs no database call.
 */
export class BudgetAlerts {
  private readonly recorded = new Set<string>();

  constructor(
    private readonly limiter: Limiter,
    private readonly webhooks: SqlWebhookStore,
    private readonly now: () => number,
    private readonly onError: (err: Error) => void,
    private readonly thresholds: readonly number[] = BUDGET_THRESHOLDS,
  ) {}

  /**
   * Never rejects: a failed check is reported, and the next settle of the scope checks again.
   * `boundMicros` is the settled request's cost bound: 100 % counts as reached when what is
   * left no longer covers it (admission guarantees spend never exceeds the budget, so the
   * spend itself rarely lands exactly on it; the next such request would be refused).
   */
  async afterSettle(subject: AlertSubject, scopes: readonly LimitScope[], costMicros: Micros, boundMicros: Micros = 0): Promise<void> {
    const budgeted = scopes.filter((s) => s.limits.budget !== undefined);
    if (costMicros <= 0 || budgeted.length === 0 || !subject.org) return;
    try {
      const usage = await this.limiter.usageOf(budgeted);
      for (const [i, u] of usage.entries()) {
        const scope = budgeted[i] as LimitScope;
        const b = u.budget;
        if (!b) continue;
        for (const threshold of this.thresholds) {
          const reached = b.spentMicros * 100 >= threshold * b.limitMicros || (threshold === 100 && b.limitMicros - b.spentMicros < boundMicros);
          if (!reached) continue;
          const periodStart = b.periodStart;
          const memo = `${scope.id}|${threshold}|${periodStart}`;
          if (this.recorded.has(memo)) continue;
          const isKey = scope.owner?.kind === 'key';
          await this.webhooks.recordCrossing({
            orgId: subject.org.id, scope: scope.id, threshold, periodStart, type: 'budget.threshold',
            body: {
              type: 'budget.threshold', org: subject.org.name,
              ...(subject.project ? { project: subject.project.name } : {}),
              ...(isKey && subject.apiKey ? { key: subject.apiKey.prefix } : {}),
              scope: isKey ? 'key' : 'project', threshold,
              spent: microsToUsd(b.spentMicros), budget: microsToUsd(b.limitMicros),
              period: { kind: b.period, start: new Date(periodStart).toISOString(), end: periodEndIso(b.period, periodStart) },
              time: new Date(this.now()).toISOString(),
            },
          });
          if (this.recorded.size >= MAX_REMEMBERED) this.recorded.clear();
          this.recorded.add(memo);
        }
      }
    } catch (err) {
      this.onError(err as Error);
    }
  }
}

function periodEndIso(period: 'day' | 'month' | 'total', start: number): string | null {
  const end = periodBounds(period, start).end;
  return end === null ? null : new Date(end).toISOString();
}
