import { periodBounds } from '../model/periods.js';
import type { Limiter, LimitScope } from '../model/limits.js';
import { microsToUsd, type Micros } from '../lib/money.js';
import type { SqlWebhookStore } from '../store/webhook-store.js';

/** The default thresholds of every budget, in percent of the period's budget (`webhooks.budget_thresholds`; docs/limits.md, "Alerts"). */
const BUDGET_THRESHOLDS: readonly number[] = [50, 80, 100];

/** Crossings this instance remembers; past it the memory starts over (a few extra inserts, which find the row). */
const MAX_REMEMBERED = 10_000;

/** The least time between two peeks of the same budget scopes by one instance (docs/limits.md, "Alerts"). */
const CHECK_INTERVAL_MS = 1000;

interface ScopeCheck {
  /** Its key in `checks`: the budget scopes' ids. */
  id: string;
  /** The latest settle's org, key and project (never the exchange itself: an entry outlives its request). */
  subject: AlertSubject;
  scopes: readonly LimitScope[];
  /** The largest cost bound of the settles waiting for the next check. */
  boundMicros: Micros;
  lastRun: number;
  /** The check under way, if one is. */
  run: Promise<void> | undefined;
  /** A settle is waiting for a check. */
  waiting: boolean;
  timer: NodeJS.Timeout | undefined;
}

/** What a settled request names: its org, key and project (the pipeline's exchange). */
export interface AlertSubject {
  org: { id: string; name: string } | undefined;
  apiKey: { id: string; prefix: string } | undefined;
  project: { id: string; name: string } | undefined;
}

/**
 * Budget thresholds (by default 50, 80 and 100 % of a key's or a project's budget this period),
 * checked after the settles that spent something on a budget scope: the spend is read
 * from the limits engine (one peek, the same store the budget is counted in) at most once
 * per `intervalMs` for the same scopes — settles meanwhile are checked together by one peek
 * at the end of the interval, so a busy key costs one Redis call a second, not one a
 * request, and a crossing is recorded within the interval of the settle that made it — and each
 * threshold it has reached is recorded with an INSERT that only one caller of all
 * instances wins (`alert_events`, unique per org, scope, threshold and period start).
 * The winner's event goes out through the outbox (WebhookDeliverer). A crossing this
 * instance already saw recorded costs no database call.
 */
export class BudgetAlerts {
  private readonly recorded = new Set<string>();
  /**
   * The checks of each set of budget scopes (a key and its project): when the last ran, and
   * the settles waiting for the next. An entry idle for an interval is forgotten.
   */
  private readonly checks = new Map<string, ScopeCheck>();
  private closed = false;

  constructor(
    private readonly limiter: Limiter,
    private readonly webhooks: SqlWebhookStore,
    private readonly now: () => number,
    private readonly onError: (err: Error) => void,
    private readonly thresholds: readonly number[] = BUDGET_THRESHOLDS,
    private readonly intervalMs = CHECK_INTERVAL_MS,
  ) {}

  /**
   * Never rejects: a failed check is reported, and the next settle of the scope checks again.
   * `boundMicros` is the settled request's cost bound: 100 % counts as reached when what is
   * left no longer covers it (admission guarantees spend never exceeds the budget, so the
   * spend itself rarely lands exactly on it; the next such request would be refused).
   * Resolves when this settle's check has run, or has been left to the one waiting for the interval's end.
   */
  afterSettle(subject: AlertSubject, scopes: readonly LimitScope[], costMicros: Micros, boundMicros: Micros = 0): Promise<void> {
    const budgeted = scopes.filter((s) => s.limits.budget !== undefined);
    if (costMicros <= 0 || budgeted.length === 0 || !subject.org || this.closed) return Promise.resolve();
    const id = budgeted.map((s) => s.id).join(' ');
    let check = this.checks.get(id);
    if (!check) this.checks.set(id, (check = { id, subject, scopes: budgeted, boundMicros: 0, lastRun: -Infinity, run: undefined, waiting: false, timer: undefined }));
    // The latest settle names the scopes (their limits may have changed); the bound is the largest waiting.
    check.subject = { org: subject.org, apiKey: subject.apiKey, project: subject.project };
    check.scopes = budgeted;
    check.boundMicros = Math.max(check.boundMicros, boundMicros);
    check.waiting = true;
    return this.pump(check);
  }

  /** The gateway is closing: the checks waiting for their interval's end run now (their crossings are not lost), and no more start. */
  async close(): Promise<void> {
    this.closed = true;
    const checks = [...this.checks.values()];
    this.checks.clear();
    await Promise.all(checks.map(async (check) => {
      clearTimeout(check.timer);
      check.timer = undefined;
      await check.run; // a check under way finishes; the settles that came meanwhile are checked after it
      if (check.waiting) await this.check(check.subject, check.scopes, check.boundMicros);
    }));
  }

  /** Runs the waiting check now, or leaves it to the timer at the interval's end; one check of a set of scopes at a time. */
  private async pump(check: ScopeCheck): Promise<void> {
    if (check.run || check.timer || !check.waiting || this.closed) return;
    if (this.sinceLastRun(check) < this.intervalMs) return this.arm(check);
    check.waiting = false;
    check.lastRun = performance.now();
    const bound = check.boundMicros;
    check.boundMicros = 0;
    try {
      await (check.run = this.check(check.subject, check.scopes, bound)); // rejects only if onError throws
    } finally {
      check.run = undefined;
    }
    if (check.waiting) return this.pump(check);
    this.arm(check);
  }

  /** Real time since the last peek: this bounds the load, whatever the clock of the periods. */
  private sinceLastRun(check: ScopeCheck): number {
    return performance.now() - check.lastRun;
  }

  /**
   * A timer for the interval's end: it runs the settles that came meanwhile, or forgets the
   * entry when none did (the map holds the scopes settled within the last interval only).
   */
  private arm(check: ScopeCheck): void {
    if (this.closed) return;
    check.timer = setTimeout(() => {
      check.timer = undefined;
      if (check.waiting) this.pump(check).catch(() => undefined); // a failure went to onError already
      else if (!check.run && this.checks.get(check.id) === check) this.checks.delete(check.id);
    }, Math.max(0, this.intervalMs - this.sinceLastRun(check)));
    check.timer.unref();
  }

  private async check(subject: AlertSubject, budgeted: readonly LimitScope[], boundMicros: Micros): Promise<void> {
    if (!subject.org) return;
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
