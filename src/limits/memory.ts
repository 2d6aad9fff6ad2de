import { IdPool } from '../lib/ids.js';
import { LimiterBase } from './base.js';
import { ScopeState } from './memory-state.js';
import { periodBounds, spendCounterName } from '../model/periods.js';
import { limitedScopes, validateLimitSpec, validateMetered } from './spec.js';
import type { AdmitRequest, AdmitResult, Hold, LimitKind, Limiter, LimiterStats, LimitScope, Metered, ScopeUsage, SpendSeed } from '../model/limits.js';
import { SEED_FAILED, limitHeaders, refusal, refuses, tokenReservation, unavailable, usageFromReading, type ScopeReading } from './verdict.js';

export const DEFAULT_HOLD_TTL_MS = 15 * 60_000;
export const WINDOW_MS = 60_000;

export interface MemoryLimiterOptions {
  seed: SpendSeed;
  /** The clock (ms since epoch); tests inject one. */
  now?: () => number;
  /** How long an admitted request holds its slot and budget reservation if never settled. */
  holdTtlMs?: number;
  /** Length of the rpm/tpm windows; 60 s in production, shorter only in tests. */
  windowMs?: number;
  onDegraded?: (kind: LimitKind, err: Error) => void;
}

interface HoldPart {
  state: ScopeState;
  tokens: boolean;
  slot: boolean;
  /** The spend counter this hold's cost settles into: the period it was admitted in. */
  spendName: string | undefined;
}

class MemoryHold implements Hold {
  done = false;
  constructor(readonly requestId: string, readonly id: string, readonly parts: readonly HoldPart[]) {}
}

/**
 * The in-process driver: exact for one gateway process. Check and reserve happen in one
 * synchronous step, so concurrent requests cannot interleave between them; only seeding
 * a budget's spend (a database read) is asynchronous, and it happens before that step.
 */
export class MemoryLimiter extends LimiterBase implements Limiter {
  private readonly scopes = new Map<string, ScopeState>();
  /** Seeds in flight, by scope and period, so concurrent first uses share one read. */
  private readonly seeding = new Map<string, Promise<void>>();
  private readonly ids = new IdPool();
  private readonly now: () => number;
  private readonly holdTtlMs: number;
  private readonly windowMs: number;
  private readonly degraded: Record<LimitKind, number> = { rpm: 0, tpm: 0, concurrency: 0, budget: 0 };

  constructor(private readonly opts: MemoryLimiterOptions) {
    super();
    this.now = opts.now ?? Date.now;
    this.holdTtlMs = opts.holdTtlMs ?? DEFAULT_HOLD_TTL_MS;
    this.windowMs = opts.windowMs ?? WINDOW_MS;
  }

  async admit(input: AdmitRequest): Promise<AdmitResult> {
    const scopes = limitedScopes(input);
    const req = { ...input, scopes };
    if (!scopes.length) return { ok: true, hold: new MemoryHold(req.requestId, '', []), headers: {}, degraded: [] };
    // Seeding awaits the database; a period may roll over meanwhile, hence the (bounded) retry.
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        if (await this.seedMissing(scopes)) continue;
      } catch (err) {
        this.degraded.budget++;
        this.opts.onDegraded?.('budget', err as Error);
        return { ok: false, ...unavailable(scopes, SEED_FAILED) };
      }
      const verdict = this.checkAndReserve(req);
      if (verdict) return verdict;
    }
    return { ok: false, ...unavailable(scopes, 'the budget period changed while it was being read') };
  }

  /**
   * Synchronous from the first read to the last write: this is what makes it atomic.
   * Undefined when a budget period began since its spend was seeded (seed again).
   */
  private checkAndReserve(req: AdmitRequest): AdmitResult | undefined {
    const now = this.now();
    const at = { now, windowMs: this.windowMs };
    const states = req.scopes.map((s) => this.state(s.id));
    const readings = req.scopes.map((s, i) => states[i]!.read(s, now, this.windowMs, req.tokens, req.costMicros));
    if (readings.some((r) => Number.isNaN(r.budget?.spent))) return undefined;
    if (readings.some(refuses)) return { ok: false, ...refusal(req, readings, at) };
    const id = `${req.requestId}.${this.ids.next('h', 8)}`;
    const parts = req.scopes.map((scope, i) => this.reserve(scope, states[i]!, readings[i]!, id, req, now));
    return { ok: true, hold: new MemoryHold(req.requestId, id, parts), headers: limitHeaders(req, readings, at, true), degraded: [] };
  }

  private reserve(scope: LimitScope, st: ScopeState, r: ScopeReading, id: string, req: AdmitRequest, now: number): HoldPart {
    const { rpm, tpm, maxConcurrent, budget } = scope.limits;
    if (rpm !== undefined) st.addRequest(now);
    if (tpm !== undefined) {
      const tokens = tokenReservation(req.tokens, tpm);
      st.tokens.set(id, { at: now, tokens });
      st.tokenSum += tokens;
    }
    if (maxConcurrent !== undefined) st.slots.set(id, now + this.holdTtlMs);
    if (budget) {
      st.budgetHolds.set(id, { micros: req.costMicros, expiresAt: now + this.holdTtlMs });
      st.heldSum += req.costMicros;
    }
    return {
      state: st, tokens: tpm !== undefined, slot: maxConcurrent !== undefined,
      spendName: budget && r.budget ? spendCounterName(budget.period, r.budget.periodStart) : undefined,
    };
  }

  settle(hold: Hold, metered: Metered): Promise<void> {
    validateMetered(metered);
    if (!(hold instanceof MemoryHold) || hold.done) return Promise.resolve();
    hold.done = true;
    for (const part of hold.parts) {
      const st = part.state;
      const reserved = part.tokens ? st.tokens.get(hold.id) : undefined;
      if (reserved) {
        st.tokenSum += metered.tokens - reserved.tokens;
        reserved.tokens = metered.tokens;
      }
      if (part.slot) st.slots.delete(hold.id);
      if (part.spendName !== undefined) {
        const bh = st.budgetHolds.get(hold.id);
        if (bh) {
          st.heldSum -= bh.micros;
          st.budgetHolds.delete(hold.id);
        }
        // Spend belongs to the period the request was admitted in; a later period's counter is not touched.
        if (st.spend?.name === part.spendName) st.spend.micros += metered.costMicros;
      }
    }
    return Promise.resolve();
  }

  async usageOf(scopes: readonly LimitScope[]): Promise<ScopeUsage[]> {
    for (const scope of scopes) validateLimitSpec(scope.limits);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        await this.seedMissing(scopes);
        const now = this.now();
        const readings = scopes.map((s) => this.state(s.id).read(s, now, this.windowMs, 0, 0));
        if (readings.every((r) => !Number.isNaN(r.budget?.spent))) return scopes.map((s, i) => usageFromReading(s, readings[i]!, { now, windowMs: this.windowMs }));
      }
      throw new Error('the budget period changed while it was being read');
    } catch {
      throw unavailable(scopes, SEED_FAILED).error;
    }
  }

  stats(): LimiterStats {
    return { driver: 'memory', degraded: { ...this.degraded }, pendingReplays: 0 };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.seeding.values()]);
  }

  private state(id: string): ScopeState {
    let st = this.scopes.get(id);
    if (!st) this.scopes.set(id, (st = new ScopeState()));
    return st;
  }

  /** Seeds the current period's spend of every budget that has none; true if it had to. */
  private async seedMissing(scopes: readonly LimitScope[]): Promise<boolean> {
    const now = this.now();
    const waits: Array<Promise<void>> = [];
    for (const scope of scopes) {
      const budget = scope.limits.budget;
      if (!budget) continue;
      const { start } = periodBounds(budget.period, now);
      const name = spendCounterName(budget.period, start);
      const st = this.state(scope.id);
      if (st.spend?.name === name) continue;
      const key = `${scope.id}\n${name}`;
      let pending = this.seeding.get(key);
      if (!pending) {
        pending = this.opts.seed(scope.id, start, scope.owner).then((micros) => {
          if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`the spend seed of ${scope.id} is not a whole number of micro-USD: ${micros}`);
          // Spend settled while the seed was read is in the seed (its log row) or lost; see docs/limits.md.
          if (st.spend?.name !== name) st.spend = { name, micros };
        }).finally(() => this.seeding.delete(key));
        this.seeding.set(key, pending);
      }
      waits.push(pending);
    }
    await Promise.all(waits);
    return waits.length > 0;
  }
}
