import { describe, expect, it } from 'vitest';
import type { Limiter, LimitScope, ScopeUsage } from '../model/limits.js';
import type { SqlWebhookStore } from '../store/webhook-store.js';
import { type AlertSubject, BudgetAlerts } from './budget-alerts.js';

const SCOPE: LimitScope = { id: 'key:k1', limits: { budget: { micros: 1_000_000, period: 'total' } }, owner: { kind: 'key', id: 'k1' } };
const SUBJECT: AlertSubject = { org: { id: 'org_1', name: 'acme' }, apiKey: { id: 'k1', prefix: 'tg_k1' }, project: undefined };
const LIMIT = 1_000_000;

/** A limiter whose budget spend the test sets, counting the peeks; a webhook store recording the crossings. */
function fakes(): { limiter: Limiter; webhooks: SqlWebhookStore; peeks: () => number; spend: (micros: number) => void; crossings: number[] } {
  let spent = 0;
  let peeks = 0;
  const crossings: number[] = [];
  const usage = (): ScopeUsage => ({
    budget: { limitMicros: LIMIT, period: 'total', spentMicros: spent, heldMicros: 0, remainingMicros: LIMIT - spent, periodStart: 0, resetsAt: null },
  } as ScopeUsage);
  const limiter = {
    async usageOf(scopes: readonly LimitScope[]) {
      peeks++;
      return scopes.map(usage);
    },
  } as unknown as Limiter;
  const webhooks = {
    async recordCrossing(c: { threshold: number }) {
      crossings.push(c.threshold);
      return true;
    },
  } as unknown as SqlWebhookStore;
  return { limiter, webhooks, peeks: () => peeks, spend: (m) => (spent = m), crossings };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('budget alerts: one peek per interval for a busy key', () => {
  it('a burst of settles costs the first peek and one at the interval\'s end, and the crossing made by the last settle is recorded', async () => {
    const f = fakes();
    const alerts = new BudgetAlerts(f.limiter, f.webhooks, Date.now, (err) => { throw err; }, [50, 80, 100], 100);
    const settled: Promise<void>[] = [];
    for (let i = 1; i <= 200; i++) {
      f.spend(i * 2_500); // the 200th settle brings the spend to 50 %
      settled.push(alerts.afterSettle(SUBJECT, [SCOPE], 2_500));
    }
    await Promise.all(settled);
    expect(f.peeks()).toBe(1); // the first settle's; the rest wait for the interval's end
    expect(f.crossings).toEqual([]);
    await sleep(250);
    expect(f.peeks()).toBe(2);
    expect(f.crossings).toEqual([50]);
    await alerts.close();
  });

  it('settles farther apart than the interval are each checked at once', async () => {
    const f = fakes();
    const alerts = new BudgetAlerts(f.limiter, f.webhooks, Date.now, (err) => { throw err; }, [50, 80, 100], 20);
    for (let i = 1; i <= 3; i++) {
      await alerts.afterSettle(SUBJECT, [SCOPE], 1);
      await sleep(40);
    }
    expect(f.peeks()).toBe(3);
    await alerts.close();
  });

  it('closing runs the check still waiting for its interval, so a crossing at shutdown is not lost', async () => {
    const f = fakes();
    const alerts = new BudgetAlerts(f.limiter, f.webhooks, Date.now, (err) => { throw err; }, [50, 80, 100], 60_000);
    await alerts.afterSettle(SUBJECT, [SCOPE], 1);
    f.spend(900_000);
    await alerts.afterSettle(SUBJECT, [SCOPE], 899_999);
    expect(f.crossings).toEqual([]);
    await alerts.close();
    expect(f.peeks()).toBe(2);
    expect(f.crossings).toEqual([50, 80]);
    await alerts.afterSettle(SUBJECT, [SCOPE], 1); // closed: no check starts
    expect(f.peeks()).toBe(2);
  });

  it('closing while a check is under way waits for it, then checks the settles that came meanwhile', async () => {
    const f = fakes();
    const alerts = new BudgetAlerts(f.limiter, f.webhooks, Date.now, (err) => { throw err; }, [50, 80, 100], 60_000);
    const first = alerts.afterSettle(SUBJECT, [SCOPE], 1); // its peek is under way
    f.spend(900_000);
    const second = alerts.afterSettle(SUBJECT, [SCOPE], 899_999); // waits for the interval's end
    await alerts.close();
    await Promise.all([first, second]);
    expect(f.peeks()).toBe(2);
    expect(f.crossings).toEqual([50, 80]);
  });

  it('a failed check, even one whose error report throws, leaves the scopes checked again at the next settle', async () => {
    const f = fakes();
    let failNext = true;
    const peek = f.limiter.usageOf.bind(f.limiter);
    f.limiter.usageOf = async (scopes) => {
      if (failNext) {
        failNext = false;
        await peek(scopes);
        throw new Error('redis went away');
      }
      return peek(scopes);
    };
    const reported: string[] = [];
    const alerts = new BudgetAlerts(f.limiter, f.webhooks, Date.now, (err) => {
      reported.push(err.message);
      throw err;
    }, [50, 80, 100], 20);
    await expect(alerts.afterSettle(SUBJECT, [SCOPE], 1)).rejects.toThrow('redis went away');
    await sleep(40);
    f.spend(600_000);
    await alerts.afterSettle(SUBJECT, [SCOPE], 599_999);
    expect(reported).toEqual(['redis went away']);
    expect(f.peeks()).toBe(2);
    expect(f.crossings).toEqual([50]);
    await alerts.close();
  });
});
