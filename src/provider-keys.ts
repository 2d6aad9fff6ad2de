import type { Store } from './store/types.js';

interface Entry { keys: ReadonlyMap<string, string>; expires: number }

/**
 * Each org's own provider keys (BYOK), cached for `ttlMs` (1 s) so a model request
 * does not read the database; a key set with the CLI takes effect within that time.
 */
export class ProviderKeyCache {
  private readonly cache = new Map<string, Entry>();

  constructor(private readonly store: Store, private readonly ttlMs = 1000, private readonly now: () => number = Date.now) {}

  async keysOf(orgId: string): Promise<ReadonlyMap<string, string>> {
    const t = this.now();
    const hit = this.cache.get(orgId);
    if (hit && hit.expires > t) return hit.keys;
    const providers = await this.store.listProviderKeyProviders(orgId);
    const keys = new Map<string, string>();
    for (const p of providers) {
      const key = await this.store.getProviderKey(orgId, p);
      if (key) keys.set(p, key);
    }
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(orgId, { keys, expires: t + this.ttlMs });
    return keys;
  }
}
