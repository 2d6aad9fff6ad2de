import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

/**
 * Where stored replies live: Redis when the gateway has one (every instance shares the
 * entries), else this process's memory with a byte bound. A Redis call that fails or takes
 * longer than its bound throws CacheUnavailable: the request is then served without the
 * cache (`bypass`), never refused because of it.
 */
export interface CacheStorage {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlS: number): Promise<void>;
  /** Adds an item at the head of a capped list (the semantic index), kept `ttlS` after its last addition. */
  push(list: string, item: string, cap: number, ttlS: number): Promise<void>;
  /** The list's items, newest first. */
  items(list: string): Promise<string[]>;
}

export class CacheUnavailable extends Error {}

export class MemoryCacheStorage implements CacheStorage {
  readonly kind = 'memory';
  private readonly entries: LRUCache<string, string>;
  private readonly lists: LRUCache<string, string[]>;

  constructor(maxBytes: number) {
    // Strings count twice their length (UTF-16); the index gets a quarter of the bound.
    this.entries = new LRUCache<string, string>({ maxSize: Math.max(1, Math.floor(maxBytes * 0.75)), sizeCalculation: (v, k) => 2 * (v.length + k.length) });
    this.lists = new LRUCache<string, string[]>({
      maxSize: Math.max(1, Math.floor(maxBytes * 0.25)), sizeCalculation: (v, k) => 2 * (k.length + v.reduce((n, s) => n + s.length, 0)) || 1,
    });
  }

  async get(key: string): Promise<string | undefined> {
    return this.entries.get(key);
  }

  async set(key: string, value: string, ttlS: number): Promise<void> {
    this.entries.set(key, value, { ttl: ttlS * 1000 });
  }

  async push(list: string, item: string, cap: number, ttlS: number): Promise<void> {
    const next = [item, ...(this.lists.get(list) ?? [])].slice(0, cap);
    this.lists.set(list, next, { ttl: ttlS * 1000 });
  }

  async items(list: string): Promise<string[]> {
    return this.lists.get(list) ?? [];
  }
}

/** Entries in the gateway's Redis, under `redis.key_prefix` + `cache:`. */
export class RedisCacheStorage implements CacheStorage {
  readonly kind = 'redis';

  constructor(private readonly redis: Redis, private readonly prefix: string, private readonly timeoutMs: number) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.bounded(this.redis.get(this.prefix + key))) ?? undefined;
  }

  async set(key: string, value: string, ttlS: number): Promise<void> {
    await this.bounded(this.redis.set(this.prefix + key, value, 'EX', ttlS));
  }

  async push(list: string, item: string, cap: number, ttlS: number): Promise<void> {
    const k = this.prefix + list;
    await this.bounded(this.redis.multi().lpush(k, item).ltrim(k, 0, cap - 1).expire(k, ttlS).exec());
  }

  async items(list: string): Promise<string[]> {
    return this.bounded(this.redis.lrange(this.prefix + list, 0, -1));
  }

  /** The call's result, or CacheUnavailable when Redis failed or did not answer within the bound. */
  private async bounded<T>(call: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CacheUnavailable(`Redis did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([call, timeout]);
    } catch (err) {
      call.catch(() => undefined);
      throw err instanceof CacheUnavailable ? err : new CacheUnavailable((err as Error).message);
    } finally {
      clearTimeout(timer);
    }
  }
}
