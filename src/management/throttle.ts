import { DEFAULT_REDIS_KEY_PREFIX } from '../config/gateway-config.js';
import { createLimiter, type Limiter, type RedisLike } from '../limits/index.js';
import { TtlCache } from '../lib/ttl-cache.js';

/** Failed sign-ins counted per account and per client address, over a sliding minute. */
export interface ThrottleLimits {
  perAccount: number;
  perIp: number;
}

const DEFAULT_THROTTLE: ThrottleLimits = { perAccount: 5, perIp: 20 };
const WINDOW_MS = 60_000;

/** The things a sign-in is counted against: its account (lower-cased email) and its client address. */
export interface ThrottleSubject {
  email: string;
  ip: string;
}

/**
 * Sign-in throttling. `check` before verifying a password: a subject over its limit is
 * refused (429) even with the right password, so throttling tells an attacker nothing.
 * `failed` after a wrong one. Successful sign-ins are not counted.
 */
export interface LoginThrottle {
  /** Milliseconds until the subject may try again; 0 when it may now. `scope` names the limit that refused. */
  check(s: ThrottleSubject): Promise<{ waitMs: number; scope: 'account' | 'address' }>;
  failed(s: ThrottleSubject): Promise<void>;
}

const scopes = (s: ThrottleSubject, l: ThrottleLimits) => [
  { id: `login:account:${s.email}`, limits: { rpm: l.perAccount }, scope: 'account' as const },
  { id: `login:ip:${s.ip}`, limits: { rpm: l.perIp }, scope: 'address' as const },
];

/**
 * In one process: failure times per subject in a bounded LRU (a flood of made-up
 * emails evicts the oldest entries instead of growing memory). Not shared between
 * instances: with N instances and no Redis, an attacker gets N times the limit.
 */
export class MemoryLoginThrottle implements LoginThrottle {
  private readonly failures;

  constructor(private readonly limits: ThrottleLimits = DEFAULT_THROTTLE, private readonly now: () => number = Date.now, max = 50_000) {
    this.failures = new TtlCache<string, number[]>({ max, ttlMs: WINDOW_MS, now });
  }

  private recent(id: string): number[] {
    const cutoff = this.now() - WINDOW_MS;
    return (this.failures.peek(id) ?? []).filter((t) => t > cutoff);
  }

  async check(s: ThrottleSubject): Promise<{ waitMs: number; scope: 'account' | 'address' }> {
    let worst = { waitMs: 0, scope: 'account' as 'account' | 'address' };
    for (const sc of scopes(s, this.limits)) {
      const times = this.recent(sc.id);
      if (times.length < sc.limits.rpm) continue;
      // The oldest failure that keeps the count at the limit must leave the window.
      const waitMs = (times[times.length - sc.limits.rpm] ?? 0) + WINDOW_MS - this.now();
      if (waitMs > worst.waitMs) worst = { waitMs, scope: sc.scope };
    }
    return worst;
  }

  async failed(s: ThrottleSubject): Promise<void> {
    for (const sc of scopes(s, this.limits)) this.failures.set(sc.id, [...this.recent(sc.id), this.now()].slice(-sc.limits.rpm));
  }
}

/**
 * Across instances: the limits engine's Redis driver (one atomic script per call on
 * Redis's clock), one rpm window per account and per address. If Redis does not
 * answer, sign-ins are not throttled (fail open, like rate limits) rather than refused.
 */
export class RedisLoginThrottle implements LoginThrottle {
  private readonly limiter: Limiter;

  constructor(redis: RedisLike, private readonly limits: ThrottleLimits = DEFAULT_THROTTLE, keyPrefix = `${DEFAULT_REDIS_KEY_PREFIX}login:`) {
    this.limiter = createLimiter({ redis, seed: async () => 0, keyPrefix });
  }

  async check(s: ThrottleSubject): Promise<{ waitMs: number; scope: 'account' | 'address' }> {
    let worst = { waitMs: 0, scope: 'account' as 'account' | 'address' };
    for (const sc of scopes(s, this.limits)) {
      try {
        const u = await this.limiter.usage(sc);
        if (u.rpm && u.rpm.remaining <= 0 && u.rpm.resetsAt !== null) {
          const waitMs = u.rpm.resetsAt - u.at;
          if (waitMs > worst.waitMs) worst = { waitMs, scope: sc.scope };
        }
      } catch {
        // Redis unavailable: not throttled.
      }
    }
    return worst;
  }

  async failed(s: ThrottleSubject): Promise<void> {
    for (const sc of scopes(s, this.limits)) {
      // One admitted request in the window is one failure; release frees nothing else (rpm keeps counting it).
      const verdict = await this.limiter.admit({ requestId: 'login', scopes: [sc], tokens: 0, costMicros: 0 });
      if (verdict.ok) await this.limiter.release(verdict.hold);
    }
  }
}
