import type { Store } from './store/types.js';
import { TtlCache } from './ttl-cache.js';

/** Orgs whose provider keys are kept; past it the least recently used is read again when it comes back. */
const MAX_CACHED_ORGS = 10_000;

/**
 * Each org's own provider keys (BYOK), decrypted and cached for `ttlMs` (1 s) so a
 * model request does not read the database; a key set with the CLI or the management
 * API takes effect within that time.
 */
export class ProviderKeyCache {
  private readonly cache;

  constructor(private readonly store: Store, ttlMs = 1000, now: () => number = Date.now) {
    this.cache = new TtlCache<string, ReadonlyMap<string, string>>({ max: MAX_CACHED_ORGS, ttlMs, now });
  }

  async keysOf(orgId: string): Promise<ReadonlyMap<string, string>> {
    const hit = this.cache.get(orgId);
    if (hit) return hit;
    const keys = await this.store.providerKeys.keysOf(orgId);
    this.cache.set(orgId, keys);
    return keys;
  }
}
