import type { Store } from '../store/types.js';
import { TtlCache } from '../lib/ttl-cache.js';

/** Orgs whose provider keys are kept; past it the least recently used is read again when it comes back. */
const MAX_CACHED_ORGS = 10_000;

/**
 * Each org's own provider keys (BYOK), decrypted and cached for `ttlMs` (1 s,
 * `cache.ttl_ms`) so a model request does not read the database. A key set or removed
 * with the CLI or the management API is pushed to every instance and `evict`ed at once
 * (src/tenancy/invalidation.ts); the TTL is the fallback.
 */
export class ProviderKeyCache {
  private readonly cache;

  constructor(private readonly store: Store, ttlMs = 1000, now: () => number = Date.now) {
    this.cache = new TtlCache<string, ReadonlyMap<string, string>>({ max: MAX_CACHED_ORGS, ttlMs, now });
  }

  async keysOf(orgId: string): Promise<ReadonlyMap<string, string>> {
    const hit = this.cache.get(orgId);
    if (hit) return hit;
    const readAt = this.cache.epoch;
    const keys = await this.store.providerKeys.keysOf(orgId);
    this.cache.set(orgId, keys, readAt);
    return keys;
  }

  /** Forgets an org's keys, or every org's (null). */
  evict(orgId: string | null): void {
    if (orgId === null) this.cache.clear();
    else this.cache.delete(orgId);
  }
}
