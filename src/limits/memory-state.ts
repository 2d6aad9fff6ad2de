import { periodBounds, spendCounterName } from '../model/periods.js';
import type { LimitScope } from '../model/limits.js';
import { NEVER, tokenReservation, type ScopeReading } from './verdict.js';

/**
 * One scope's counters in process. Every collection is kept in time order (insertion
 * order of a Map, an array for request times), so pruning walks only the entries that
 * leave and stops at the first that stays: amortised O(1) per entry, with running sums
 * kept beside them rather than re-summed per call.
 */
export class ScopeState {
  /** Admit times of the requests in the rpm window, oldest first, from `head` on. */
  private readonly requestTimes: number[] = [];
  private head = 0;
  /** tpm reservations by hold id, in admit order. */
  readonly tokens = new Map<string, { at: number; tokens: number }>();
  tokenSum = 0;
  /** Concurrency slots: hold id → expiry. */
  readonly slots = new Map<string, number>();
  /** Budget holds: hold id → amount and expiry. */
  readonly budgetHolds = new Map<string, { micros: number; expiresAt: number }>();
  heldSum = 0;
  /** Settled spend of the current budget period; undefined until seeded. */
  spend: { name: string; micros: number } | undefined;

  addRequest(at: number): void {
    this.requestTimes.push(at);
  }

  private pruneRequests(cutoff: number): void {
    const times = this.requestTimes;
    while (this.head < times.length && (times[this.head] ?? 0) <= cutoff) this.head++;
    if (this.head > 1024 && this.head * 2 > times.length) {
      times.splice(0, this.head);
      this.head = 0;
    }
  }

  private pruneTokens(cutoff: number): void {
    for (const [id, entry] of this.tokens) {
      if (entry.at > cutoff) break;
      this.tokenSum -= entry.tokens;
      this.tokens.delete(id);
    }
  }

  private pruneSlots(now: number): void {
    for (const [id, expiresAt] of this.slots) {
      if (expiresAt > now) break;
      this.slots.delete(id);
    }
  }

  private pruneBudgetHolds(now: number): void {
    for (const [id, hold] of this.budgetHolds) {
      if (hold.expiresAt > now) break;
      this.heldSum -= hold.micros;
      this.budgetHolds.delete(id);
    }
  }

  /**
   * The scope as it stands for a request of `tokens` and `costMicros` (the same
   * arithmetic as the Redis admit script). A budget whose period has no spend counter
   * yet reads `spent: NaN`: the caller seeds it first.
   */
  read(scope: LimitScope, now: number, windowMs: number, tokens: number, costMicros: number): ScopeReading {
    const { rpm, tpm, maxConcurrent, budget } = scope.limits;
    const r: ScopeReading = {};
    if (rpm !== undefined) {
      this.pruneRequests(now - windowMs);
      const used = this.requestTimes.length - this.head;
      let wait: number | null = null;
      if (used + 1 > rpm) wait = rpm === 0 ? NEVER : (this.requestTimes[this.head + used - rpm] ?? now) + windowMs - now;
      r.rpm = { used, oldest: used ? this.requestTimes[this.head] ?? null : null, wait };
    }
    if (tpm !== undefined) {
      this.pruneTokens(now - windowMs);
      r.tpm = { used: this.tokenSum, oldest: this.tokens.values().next().value?.at ?? null, wait: this.tokenWait(tpm, tokens, now, windowMs) };
    }
    if (maxConcurrent !== undefined) {
      this.pruneSlots(now);
      const used = this.slots.size;
      r.concurrency = { used, wait: used + 1 > maxConcurrent ? (maxConcurrent === 0 ? NEVER : 1000) : null };
    }
    if (budget) {
      this.pruneBudgetHolds(now);
      const { start, end } = periodBounds(budget.period, now);
      const spent = this.spend?.name === spendCounterName(budget.period, start) ? this.spend.micros : Number.NaN;
      let wait: number | null = null;
      if (spent + this.heldSum + costMicros > budget.micros) {
        if (costMicros > budget.micros) wait = NEVER;
        else if (spent + costMicros <= budget.micros) wait = 1000; // in-flight holds will settle
        else wait = end === null ? NEVER : end - now;
      }
      r.budget = { spent, held: this.heldSum, periodStart: start, periodEnd: end, wait };
    }
    return r;
  }

  /** How long until enough reserved tokens leave the window for `tokens` more to fit. */
  private tokenWait(tpm: number, tokens: number, now: number, windowMs: number): number | null {
    if (tpm === 0) return NEVER;
    const need = this.tokenSum + tokenReservation(tokens, tpm) - tpm;
    if (need <= 0) return null;
    let freed = 0;
    for (const entry of this.tokens.values()) {
      freed += entry.tokens;
      if (freed >= need) return entry.at + windowMs - now;
    }
    return NEVER;
  }
}
