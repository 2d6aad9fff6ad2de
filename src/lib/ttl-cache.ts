import { LRUCache } from 'lru-cache';

export interface TtlCacheOptions {
  /** Entries kept at most; past it the least recently used goes (never the whole cache). */
  max: number;
  /** An entry older than this is read again from its source; 0 caches nothing. */
  ttlMs: number;
  /** The clock the TTL is measured on (the gateway's injectable clock). */
  now: () => number;
}

/**
 * A bounded cache of database lookups that expire (API keys, provider keys, balances).
 * `ttlResolution: 0` reads the clock at every lookup: no timer per lookup on the hot
 * path, and a test that moves its clock by hand sees entries expire at once.
 */
export class TtlCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly lru: LRUCache<K, V> | undefined;
  private evictions = 0;

  constructor(opts: TtlCacheOptions) {
    // lru-cache reads ttl 0 as "never expires"; here it means "always read the source".
    this.lru = opts.ttlMs > 0 ? new LRUCache<K, V>({ max: opts.max, ttl: opts.ttlMs, ttlResolution: 0, perf: { now: opts.now } }) : undefined;
  }

  /** The live entry, or undefined when absent or expired. */
  get(key: K): V | undefined {
    return this.lru?.get(key);
  }

  /** Like get, without counting as a use. */
  peek(key: K): V | undefined {
    return this.lru?.peek(key);
  }

  /**
   * Counts `delete` and `clear` calls. A loader reads it before its source and passes it
   * to `set`: a value read before an eviction (a pushed invalidation) is then not cached,
   * since it may predate the change that caused the eviction.
   */
  get epoch(): number {
    return this.evictions;
  }

  /** Stores `value`, unless `readAt` (an earlier `epoch`) shows an eviction happened since the value was read. */
  set(key: K, value: V, readAt?: number): void {
    if (readAt !== undefined && readAt !== this.evictions) return;
    this.lru?.set(key, value);
  }

  delete(key: K): void {
    this.evictions++;
    this.lru?.delete(key);
  }

  clear(): void {
    this.evictions++;
    this.lru?.clear();
  }
}
