import type { BudgetPeriod } from './limits.js';

const DAY_MS = 86_400_000;

/**
 * The budget period containing `now` (ms since epoch): UTC day, UTC calendar month, or
 * `total` (from 0, never ending). The Redis driver computes the same bounds in Lua from
 * Redis TIME (`redis-scripts.ts`); a test checks the two agree.
 */
export function periodBounds(period: BudgetPeriod, now: number): { start: number; end: number | null } {
  if (period === 'total') return { start: 0, end: null };
  if (period === 'day') {
    const start = Math.floor(now / DAY_MS) * DAY_MS;
    return { start, end: start + DAY_MS };
  }
  const d = new Date(now);
  return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/** The name of a period's spend counter, shared by both drivers (and the Redis key suffix). */
export function spendCounterName(period: BudgetPeriod, start: number): string {
  return `sp:${period}:${start}`;
}
