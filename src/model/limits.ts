import type { GatewayError } from '../lib/errors.js';
import type { Micros } from '../lib/money.js';

/** The periods a budget can have: a UTC day, a UTC calendar month, or forever. */
export type BudgetPeriod = 'day' | 'month' | 'total';

/** The four kinds of limit, as named in `onDegraded`, `stats()` and `usage()`. */
export type LimitKind = 'rpm' | 'tpm' | 'concurrency' | 'budget';

/**
 * How a scope is counted across instances (docs/limits.md, "Exact and lease mode"):
 * `exact`, one atomic Redis script per request; `lease`, each instance leases a share of
 * the limits and admits locally against it. Left out: lease where the limits are large
 * enough for the instance count (rpm and max_concurrent at least 10 × instances), else exact.
 */
export type LimitMode = 'exact' | 'lease';

/** A USD budget in integer micro-USD over a period. */
export interface BudgetSpec {
  micros: Micros;
  period: BudgetPeriod;
}

/**
 * The limits of one scope (an API key or a project). Every field is optional; a field
 * left out is no limit. All numbers are non-negative integers (`rpm: 0` refuses every
 * request). Limits are passed with each call, not stored in the engine, so changing a
 * key's limits takes effect on its next request and keeps the windows already counted.
 */
export interface LimitSpec {
  /** Requests per sliding 60 s window. */
  rpm?: number;
  /** Tokens (input + output) per sliding 60 s window. */
  tpm?: number;
  /** Requests admitted and not yet settled or released. */
  maxConcurrent?: number;
  budget?: BudgetSpec;
  /** `exact` or `lease` on a Redis driver (the in-process driver is always exact); left out: chosen by the rule above. */
  mode?: LimitMode;
}

/**
 * What a request is limited by. `id` names the counters and must be stable and unique
 * across kinds of scope, e.g. `key:<key id>` or `project:<project id>`. `label` is how
 * error messages name the scope to the client (default: `id`), e.g. `key tg_AbC12345`.
 */
export interface LimitScope {
  id: string;
  limits: LimitSpec;
  label?: string;
  /** The key or project the scope limits, when it is one (the gateway's scopes: scope-id.ts); the budget seed reads its spend. */
  owner?: ScopeOwner;
}

/** What a gateway scope limits: an API key or a project, by id. */
export interface ScopeOwner {
  kind: 'key' | 'project';
  id: string;
}

export interface AdmitRequest {
  /** The request's `req_…` id; holds are named after it (debugging, Redis members). */
  requestId: string;
  /** Every scope the request counts against (key and project); all must admit it. */
  scopes: readonly LimitScope[];
  /** Upper bound of the request's tokens: prompt bound + max output. Reserved against tpm. */
  tokens: number;
  /** Upper bound of the request's cost in micro-USD (the credit reservation). Reserved against budgets. */
  costMicros: Micros;
}

/** What a request turned out to use, given to `settle`. */
export interface Metered {
  tokens: number;
  /** The cost charged for the request (never above the bound the pipeline reserved). */
  costMicros: Micros;
}

/**
 * An admitted request's reservation. Pass it to exactly one of `settle` or `release`;
 * a second call is a no-op. Opaque apart from its ids.
 */
export interface Hold {
  readonly requestId: string;
  readonly id: string;
}

/** Response headers for the request, in the names the OpenAI SDKs read (lower case). */
export type LimitHeaders = Record<string, string>;

export type AdmitResult =
  | {
      ok: true;
      hold: Hold;
      headers: LimitHeaders;
      /** Limit kinds that were not checked because the limits store did not answer (failed open). */
      degraded: readonly LimitKind[];
    }
  | {
      ok: false;
      /** 429 `rate_limit_exceeded` / `budget_exceeded`, or 503 `limits_unavailable`; its `extras.headers` = `headers`. */
      error: GatewayError;
      headers: LimitHeaders;
      /** The limit the 429 names (for metrics); absent on a 503. */
      refusedBy?: RefusedBy;
    };

/** Which limit of which scope a 429 is about. */
export interface RefusedBy {
  kind: LimitKind;
  scopeId: string;
  /** The refusing scope's owner, when it has one. */
  owner?: ScopeOwner;
}

/** A sliding-window limit as seen now. */
export interface WindowUsage {
  limit: number;
  used: number;
  remaining: number;
  /** When the oldest counted item leaves the window (remaining next goes up); `null` when the window is empty. */
  resetsAt: number | null;
}

/** Spend of a budget's current period. */
export interface BudgetUsage {
  limitMicros: Micros;
  period: BudgetPeriod;
  /** Settled spend this period. */
  spentMicros: Micros;
  /** Reserved by requests in flight (cost bounds, until they settle). */
  heldMicros: Micros;
  remainingMicros: Micros;
  /** Start of the current period (ms since epoch, UTC); 0 for `total`. */
  periodStart: number;
  /** When the period ends and spend starts again from 0; `null` for `total`. */
  resetsAt: number | null;
}

/** One scope's counters, for `gateway keys show`, the management API and the console. */
export interface ScopeUsage {
  scopeId: string;
  /** The limits store's clock when read (ms since epoch). */
  at: number;
  rpm?: WindowUsage;
  tpm?: WindowUsage;
  concurrency?: { limit: number; used: number; remaining: number };
  budget?: BudgetUsage;
}

export interface LimiterStats {
  driver: 'memory' | 'redis';
  /** Decisions taken without the store, per kind: rate limits failed open, budgets refused with 503. */
  degraded: Record<LimitKind, number>;
  /** Settles/releases that did not reach Redis and wait to be replayed when it answers again. */
  pendingReplays: number;
  /** Requests admitted against this instance's leases, with no Redis call (lease mode); absent in-process. */
  leasedAdmits?: number;
}

/**
 * The limits engine. One instance per gateway process; the Redis driver makes the
 * counts global across instances. Wiring, per model request, before the upstream call:
 *
 * ```ts
 * const scopes = [{ id: `key:${key.id}`, limits: key.limits, label: `key ${key.prefix}` },
 *                 { id: `project:${project.id}`, limits: project.limits, label: `project ${project.name}` }];
 * const verdict = await limiter.admit({ requestId, scopes, tokens: tokenBound, costMicros: reservation });
 * reply.headers(verdict.headers);               // on every response, 2xx included
 * if (!verdict.ok) throw verdict.error;         // 429/503, before any upstream call; charge nothing
 * try { …upstream… ; await limiter.settle(verdict.hold, { tokens, costMicros: charged }); }
 * catch (err) { await limiter.release(verdict.hold); throw err; }
 * ```
 */
export interface Limiter {
  /**
   * Checks the request against every limit of every scope and, only if all pass,
   * reserves it in all of them at once (a refusal changes no counter). Store failures
   * never reject: they become fail-open admits (rate limits) or a 503 (budgets); only
   * invalid arguments do (a RangeError: a bug in the caller). A scope without limits
   * costs nothing; a request with no limited scope makes no store call.
   */
  admit(req: AdmitRequest): Promise<AdmitResult>;
  /** The request finished: corrects tpm and budget from the bounds to `metered`, frees the slot. Never rejects. */
  settle(hold: Hold, metered: Metered): Promise<void>;
  /** The request failed: nothing used (0 tokens, $0), slot freed; it still counts for rpm. Never rejects. */
  release(hold: Hold): Promise<void>;
  /** The scope's counters now (seeding its budget spend if needed). Rejects with 503 `limits_unavailable` if the store does not answer. */
  usage(scope: LimitScope): Promise<ScopeUsage>;
  /** `usage` of several scopes, in their order, read in one store call (a list page's keys); rejects as `usage` does. */
  usageOf(scopes: readonly LimitScope[]): Promise<ScopeUsage[]>;
  stats(): LimiterStats;
  /** Waits for background work (replays, seeds) to finish. Does not close the Redis client, which the caller owns. */
  close(): Promise<void>;
}

/**
 * Where budget spend comes from when the engine has no counter for a period (first use,
 * a process restart, a Redis restart, an expired counter): the micro-USD the scope spent
 * from `periodStart` (ms, UTC) until now, e.g. summed from the request log by the
 * requests' start times. Called at most once at a time per scope and period per instance,
 * with the scope's owner when it has one.
 */
export type SpendSeed = (scopeId: string, periodStart: number, owner?: ScopeOwner) => Promise<Micros>;
