import { IdPool } from '../lib/ids.js';
import { LimiterBase } from './base.js';
import { LeaseBook, type HoldPart, type LeasePart } from './lease.js';
import { DEFAULT_HOLD_TTL_MS, WINDOW_MS } from './memory.js';
import { ADMIT_SCRIPT, SETTLE_SCRIPT } from './redis-scripts.js';
import { DEFAULT_CALL_TIMEOUT_MS, ScriptRunner, StoreUnavailable, type RedisLike } from '../lib/redis-runner.js';
import { spendCounterName } from '../model/periods.js';
import { limitedScopes, validateLimitSpec, validateMetered } from './spec.js';
import type { AdmitRequest, AdmitResult, Hold, LimitKind, Limiter, LimiterStats, LimitScope, Metered, ScopeUsage, SpendSeed } from '../model/limits.js';
import {
  SEED_FAILED, degradedHeaders, limitedKinds, limitHeaders, NEVER, refusal, tokenReservation, unavailable, usageFromReading, type ScopeReading,
} from './verdict.js';

export interface RedisLimiterOptions {
  redis: RedisLike;
  seed: SpendSeed;
  /** Prefix of every key; default `tollgate:limits:`. */
  keyPrefix?: string;
  /** How long an admitted request holds its slot and budget reservation if never settled. */
  holdTtlMs?: number;
  /** Bound on every Redis call; past it the call counts as Redis being down. Default 500 ms. */
  timeoutMs?: number;
  /** TTL of a `total` budget's spend counter, renewed at each admit; re-seeded when it lapses. Default 30 days. */
  totalSpendTtlMs?: number;
  /** Settles kept for replay while Redis is down; the oldest beyond this are dropped (their holds expire). */
  maxPendingReplays?: number;
  onDegraded?: (kind: LimitKind, err: Error) => void;
  /** Tests only: replaces Redis TIME. Production leaves it unset so all instances share Redis's clock. */
  clock?: () => number;
  /** Tests only: length of the rpm/tpm windows (60 s). */
  windowMs?: number;
  /** Lease mode (docs/limits.md): false makes every scope exact whatever its `mode`. Default true. */
  leases?: boolean;
  /** How long a lease admits before it is returned and renewed; default 1 s. */
  leaseMs?: number;
  /** How long Redis keeps the slots and budget of a lease never returned (its instance died); default 10 s. */
  leaseTtlMs?: number;
}

const STATUS = { refused: 0, admitted: 1, needsSeed: 2, peeked: 3 } as const;
/** Numbers per scope in the admit script's reply, in this order. */
const READING_FIELDS = 13;

class RedisHold implements Hold {
  done = false;
  /** `leased`: the parts admitted against this instance's leases (lease mode), settled in memory while their lease is open. */
  constructor(readonly requestId: string, readonly id: string, readonly parts: readonly HoldPart[], readonly leased?: readonly LeasePart[]) {}
}

interface SettleJob {
  hold: RedisHold;
  metered: Metered;
  /** Charge the spend even if the budget hold is gone: only while no earlier attempt may have run. */
  chargeAlways: boolean;
}

/**
 * The Redis driver: the counts are global across every gateway instance on the same
 * Redis. Each admit is one EVALSHA (one round trip) that checks every limit of every
 * scope and reserves in all of them or none; settle and release are one more each.
 * Redis down: rate limits fail open, budgets refuse with 503, settles are replayed later.
 */
export class RedisLimiter extends LimiterBase implements Limiter {
  private readonly runner: ScriptRunner;
  private readonly prefix: string;
  private readonly holdTtlMs: number;
  private readonly windowMs: number;
  private readonly totalSpendTtlMs: number;
  private readonly maxPendingReplays: number;
  private readonly ids = new IdPool();
  private readonly seeding = new Map<string, Promise<number>>();
  private readonly replays: SettleJob[] = [];
  private draining: Promise<void> | undefined;
  private readonly degraded: Record<LimitKind, number> = { rpm: 0, tpm: 0, concurrency: 0, budget: 0 };
  private readonly leases: LeaseBook | undefined;

  constructor(private readonly opts: RedisLimiterOptions) {
    super();
    this.runner = new ScriptRunner(opts.redis, opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS);
    this.prefix = opts.keyPrefix ?? 'tollgate:limits:';
    if (this.prefix.includes('\n')) throw new RangeError('the limits key prefix must not contain a newline');
    this.holdTtlMs = opts.holdTtlMs ?? DEFAULT_HOLD_TTL_MS;
    this.windowMs = opts.windowMs ?? WINDOW_MS;
    this.totalSpendTtlMs = opts.totalSpendTtlMs ?? 30 * 86_400_000;
    this.maxPendingReplays = opts.maxPendingReplays ?? 10_000;
    if (opts.leases !== false) {
      this.leases = new LeaseBook({
        call: (script, args) => this.call(script, args), prefix: this.prefix, windowMs: this.windowMs, holdTtlMs: this.holdTtlMs,
        leaseMs: opts.leaseMs, leaseTtlMs: opts.leaseTtlMs, clock: opts.clock, connected: () => opts.redis.status === 'ready',
      });
    }
  }

  async admit(input: AdmitRequest): Promise<AdmitResult> {
    const scopes = limitedScopes(input);
    const req = { ...input, scopes };
    if (!scopes.length) return { ok: true, hold: new RedisHold(req.requestId, '', []), headers: {}, degraded: [] };
    const holdId = `${req.requestId}.${this.ids.next('h', 8)}`;
    if (this.leases) {
      const local = this.leases.tryAdmit(req, holdId);
      if (local) return { ok: true, hold: new RedisHold(req.requestId, holdId, [], local.parts), headers: local.headers, degraded: [] };
      this.leases.consider(scopes, req); // the exact path decides this one; the lease (sent in the same pipeline) the next ones
    }
    let seeds: Seeds = NO_SEEDS;
    try {
      // A period may roll over between reading a seed and using it, hence the (bounded) retry.
      for (let attempt = 0; attempt < 3; attempt++) {
        let reply: Reply;
        try {
          reply = await this.readOrAdmit('admit', req, holdId, seeds.values);
        } catch (err) {
          return this.admitWithoutStore(req, holdId, err as StoreUnavailable);
        } finally {
          this.forgetSeeds(seeds.carried);
        }
        const at = { now: reply.now, windowMs: this.windowMs };
        if (reply.status === STATUS.admitted) {
          return { ok: true, hold: this.holdOf(req, holdId, reply.readings), headers: limitHeaders(req, reply.readings, at, true), degraded: [] };
        }
        if (reply.status === STATUS.refused) return { ok: false, ...refusal(req, reply.readings, at) };
        try {
          seeds = await this.seedsFor(scopes, reply.readings);
        } catch (err) {
          this.countDegraded(['budget'], err as Error);
          return { ok: false, ...unavailable(scopes, SEED_FAILED) };
        }
      }
      return { ok: false, ...unavailable(scopes, 'the budget period changed while it was being read') };
    } finally {
      this.forgetSeeds(seeds.carried); // a seed read but never written must not be reused later
    }
  }

  settle(hold: Hold, metered: Metered): Promise<void> {
    validateMetered(metered);
    if (!(hold instanceof RedisHold) || hold.done) return Promise.resolve();
    hold.done = true;
    if (hold.leased) {
      const parts = this.leases?.settle(hold.leased, metered) ?? [];
      if (!parts.length) return Promise.resolve();
      return this.runSettle({ hold: new RedisHold(hold.requestId, hold.id, parts), metered, chargeAlways: true }).then(() => undefined);
    }
    if (!hold.parts.length) return Promise.resolve();
    return this.runSettle({ hold, metered, chargeAlways: true }).then(() => undefined);
  }

  async usageOf(scopes: readonly LimitScope[]): Promise<ScopeUsage[]> {
    for (const scope of scopes) validateLimitSpec(scope.limits);
    if (scopes.length === 0) return [];
    // One peek of the admit script reads every scope (as an admit checks a key and its project at once).
    const req = { requestId: 'usage', scopes: [...scopes], tokens: 0, costMicros: 0 };
    let seeds: Seeds = NO_SEEDS;
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const reply = await this.readOrAdmit('peek', req, '', seeds.values).finally(() => this.forgetSeeds(seeds.carried));
        if (reply.status !== STATUS.needsSeed) return scopes.map((s, i) => usageFromReading(s, reply.readings[i] ?? {}, { now: reply.now, windowMs: this.windowMs }));
        seeds = await this.seedsFor(scopes, reply.readings);
      }
      throw new Error('the budget period changed while it was being read');
    } catch (err) {
      throw unavailable(scopes, err instanceof StoreUnavailable ? err.publicReason : SEED_FAILED).error;
    } finally {
      this.forgetSeeds(seeds.carried);
    }
  }

  stats(): LimiterStats {
    return { driver: 'redis', degraded: { ...this.degraded }, pendingReplays: this.replays.length, leasedAdmits: this.leases?.counts.local ?? 0 };
  }

  async close(): Promise<void> {
    await this.leases?.close();
    await Promise.allSettled([...this.seeding.values(), this.draining]);
  }

  private async readOrAdmit(mode: 'admit' | 'peek', req: AdmitRequest, holdId: string, seeds: ReadonlyArray<number | undefined>): Promise<Reply> {
    const args: Array<string | number> = [
      this.opts.clock ? String(this.opts.clock()) : '', mode, holdId, req.tokens, req.costMicros,
      this.windowMs, this.holdTtlMs, this.totalSpendTtlMs, req.scopes.length,
    ];
    req.scopes.forEach((s, i) => {
      const { rpm, tpm, maxConcurrent, budget } = s.limits;
      args.push(this.base(s), rpm ?? '', tpm ?? '', maxConcurrent ?? '', budget?.micros ?? '', budget?.period ?? '', seeds[i] ?? '');
    });
    const raw = await this.call(ADMIT_SCRIPT, args);
    return parseReply(raw, req.scopes);
  }

  /**
   * Reads the spend of every budget the script found without a counter. Concurrent
   * first uses in this process share one read; instances that seed at once each read,
   * and the script keeps the first value written, so nothing is counted twice.
   */
  private async seedsFor(scopes: readonly LimitScope[], readings: readonly ScopeReading[]): Promise<Seeds> {
    const carried: Array<[string, Promise<number>]> = [];
    const reads = scopes.map(async (scope, i) => {
      const b = readings[i]?.budget;
      if (!scope.limits.budget || !b || !Number.isNaN(b.spent)) return undefined;
      const key = `${scope.id}\n${spendCounterName(scope.limits.budget.period, b.periodStart)}`;
      let pending = this.seeding.get(key);
      if (!pending) {
        pending = this.opts.seed(scope.id, b.periodStart, scope.owner).then((micros) => {
          if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`the spend seed of ${scope.id} is not a whole number of micro-USD: ${micros}`);
          return micros;
        });
        this.seeding.set(key, pending);
        const p = pending;
        p.catch(() => this.forgetSeeds([[key, p]]));
      }
      carried.push([key, pending]);
      return pending;
    });
    try {
      return { values: await Promise.all(reads), carried };
    } catch (err) {
      this.forgetSeeds(carried);
      throw err;
    }
  }

  /**
   * A seed is shared until the call that wrote it has answered. Replies come back in the
   * order Redis ran the scripts, so every admit that found the counter missing before
   * the write has joined the shared read by then; a miss after it (Redis restarted
   * again) reads afresh.
   */
  private forgetSeeds(carried: Seeds['carried']): void {
    for (const [key, p] of carried) if (this.seeding.get(key) === p) this.seeding.delete(key);
  }

  private admitWithoutStore(req: AdmitRequest, holdId: string, err: StoreUnavailable): AdmitResult {
    const kinds = limitedKinds(req.scopes);
    this.countDegraded(kinds, err);
    // The script may still run when Redis comes back: undo what it would reserve.
    if (err.sent) this.enqueue({ hold: this.holdOf(req, holdId, []), metered: { tokens: 0, costMicros: 0 }, chargeAlways: false });
    if (kinds.includes('budget')) return { ok: false, ...unavailable(req.scopes, err.publicReason) };
    return { ok: true, hold: new RedisHold(req.requestId, '', []), headers: degradedHeaders(req.scopes), degraded: kinds };
  }

  private countDegraded(kinds: readonly LimitKind[], err: Error): void {
    for (const kind of kinds) {
      this.degraded[kind]++;
      this.opts.onDegraded?.(kind, err);
    }
  }

  private holdOf(req: AdmitRequest, holdId: string, readings: readonly ScopeReading[]): RedisHold {
    const parts = req.scopes.map((s): HoldPart => {
      const { tpm, maxConcurrent, budget } = s.limits;
      const periodStart = readings.length ? readings[req.scopes.indexOf(s)]?.budget?.periodStart : undefined;
      return {
        base: this.base(s),
        tokens: tpm === undefined ? undefined : tokenReservation(req.tokens, tpm),
        slot: maxConcurrent !== undefined,
        cost: budget ? req.costMicros : undefined,
        spendKey: budget && periodStart !== undefined ? `${this.base(s)}:${spendCounterName(budget.period, periodStart)}` : undefined,
      };
    });
    return new RedisHold(req.requestId, holdId, parts);
  }

  /** One settle script; on failure the job waits for replay. Returns whether Redis took it. */
  private async runSettle(job: SettleJob): Promise<boolean> {
    const args: Array<string | number> = [
      this.opts.clock ? String(this.opts.clock()) : '', job.hold.id, job.metered.tokens, job.metered.costMicros,
      job.chargeAlways ? '1' : '0', this.windowMs, job.hold.parts.length,
    ];
    for (const p of job.hold.parts) args.push(p.base, p.tokens ?? '', p.slot ? '1' : '', p.cost ?? '', p.spendKey ?? '');
    try {
      await this.call(SETTLE_SCRIPT, args);
      return true;
    } catch (err) {
      this.enqueue({ ...job, chargeAlways: job.chargeAlways && !(err as StoreUnavailable).sent });
      return false;
    }
  }

  private enqueue(job: SettleJob): void {
    this.replays.push(job);
    if (this.replays.length > this.maxPendingReplays) this.replays.shift();
  }

  /** Every successful call is the sign Redis is back: replay what waits, in order, one at a time. */
  private async call(script: string, args: ReadonlyArray<string | number>): Promise<unknown> {
    // One argument, the values joined by newlines (the scripts split it): a client encodes a
    // few arguments per call instead of some forty, which was most of what it allocated.
    const result = await this.runner.run(script, [args.join('\n')]);
    if (this.replays.length && !this.draining) {
      this.draining = this.drain().finally(() => (this.draining = undefined));
    }
    return result;
  }

  private async drain(): Promise<void> {
    for (let job = this.replays.shift(); job; job = this.replays.shift()) {
      if (!(await this.runSettle(job))) return; // re-queued: Redis is down again
    }
  }

  private base(scope: LimitScope): string {
    return `${this.prefix}${scope.id}`;
  }
}

interface Seeds {
  readonly values: ReadonlyArray<number | undefined>;
  /** The shared reads these values came from, forgotten once the call carrying them answered. */
  readonly carried: ReadonlyArray<readonly [string, Promise<number>]>;
}

const NO_SEEDS: Seeds = Object.freeze({ values: [], carried: [] });

interface Reply {
  status: number;
  now: number;
  readings: ScopeReading[];
}

function parseReply(raw: unknown, scopes: readonly LimitScope[]): Reply {
  if (!Array.isArray(raw) || raw.length !== 2 + scopes.length * READING_FIELDS) throw new StoreUnavailable(`unexpected reply from the limits script: ${JSON.stringify(raw)}`, true);
  const v = raw.map(Number);
  const readings = scopes.map((scope, i) => readingOf(scope, v.slice(2 + i * READING_FIELDS, 2 + (i + 1) * READING_FIELDS)));
  return { status: v[0]!, now: v[1]!, readings };
}

/** The script's -1 is "none" (or "passes" for a wait), -2 is NEVER. */
function readingOf(scope: LimitScope, v: number[]): ScopeReading {
  const opt = (x: number | undefined): number | null => (x === undefined || x === -1 ? null : x);
  const wait = (x: number | undefined): number | null => (x === -2 ? NEVER : opt(x));
  const { rpm, tpm, maxConcurrent, budget } = scope.limits;
  const r: ScopeReading = {};
  if (rpm !== undefined) r.rpm = { used: v[0]!, oldest: opt(v[1]), wait: wait(v[2]) };
  if (tpm !== undefined) r.tpm = { used: v[3]!, oldest: opt(v[4]), wait: wait(v[5]) };
  if (maxConcurrent !== undefined) r.concurrency = { used: v[6]!, wait: wait(v[7]) };
  if (budget) r.budget = { spent: v[8] === -1 ? Number.NaN : v[8]!, held: v[9]!, periodStart: v[11]!, periodEnd: opt(v[12]), wait: wait(v[10]) };
  return r;
}
