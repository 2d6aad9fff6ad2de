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

  set(key: K, value: V): void {
    this.lru?.set(key, value);
  }

  delete(key: K): void {
    this.lru?.delete(key);
  }
}
