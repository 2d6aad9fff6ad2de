/**
 * Limits and budgets per API key and per project: rpm, tpm, concurrent requests and a
 * USD budget per day, month or in total, exact in one process (in-process driver) and
 * across instances (Redis driver). See docs/limits.md and the `Limiter` interface.
 *
 * @example
 * const limiter = createLimiter({ redis, seed: (scopeId, since) => store.spentSince(scopeId, since) });
 * const verdict = await limiter.admit({ requestId, scopes, tokens: tokenBound, costMicros: reservation });
 */
import { MemoryLimiter } from './memory.js';
import { RedisLimiter } from './redis.js';
import type { RedisLike } from '../lib/redis-runner.js';
import type { LimitKind, Limiter, SpendSeed } from '../model/limits.js';

export interface LimiterOptions {
  /** A connected ioredis client (shared with the rest of the gateway is fine): counts are global. Without it: in-process. */
  redis?: RedisLike | undefined;
  /** Budget spend of a scope since a period start, when the engine has no counter (see `SpendSeed`). */
  seed: SpendSeed;
  /** Clock of the in-process driver (tests). The Redis driver always uses Redis TIME. */
  now?: () => number;
  /** How long a request never settled (its instance crashed) keeps its slot and budget hold. Default 15 min; keep it above the longest request. */
  holdTtlMs?: number;
  /** Redis key prefix; default `tollgate:limits:`. */
  keyPrefix?: string;
  /** Bound on each Redis call (default 500 ms); past it Redis counts as down for that request. */
  timeoutMs?: number;
  /** Called for each limit kind decided without the store: rpm/tpm/concurrency failed open, budget refused with 503. */
  onDegraded?: (kind: LimitKind, err: Error) => void;
  /** Redis driver: false makes every scope exact whatever its `mode` (docs/limits.md, "Exact and lease mode"). Default true. */
  leases?: boolean;
}

/** The limits engine: the Redis driver when a client is given, else the in-process one. */
export function createLimiter(opts: LimiterOptions): Limiter {
  const { redis, seed, now, holdTtlMs, keyPrefix, timeoutMs, onDegraded, leases } = opts;
  if (redis) return new RedisLimiter({ redis, seed, holdTtlMs, keyPrefix, timeoutMs, onDegraded, leases });
  return new MemoryLimiter({ seed, now, holdTtlMs, onDegraded });
}

export { periodBounds } from '../model/periods.js';
export type { RedisLike } from '../lib/redis-runner.js';
export type { Limiter } from '../model/limits.js';
