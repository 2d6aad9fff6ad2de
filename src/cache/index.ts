import type { Redis } from 'ioredis';
import type { HookRegistry } from '../pipeline/hooks.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { UpstreamClient } from '../pipeline/upstream.js';
import { Embedder } from './semantic.js';
import { type CacheObserver, ResponseCache } from './service.js';
import { MemoryCacheStorage, RedisCacheStorage } from './storage.js';
import type { ResponseCacheConfig } from '../model/cache.js';

export interface ResponseCacheSetup {
  config: ResponseCacheConfig;
  /** The gateway's Redis connection and `redis.key_prefix`: entries shared by every instance. */
  redis: { client: Redis; keyPrefix: string; timeoutMs: number } | undefined;
  catalog: ProviderCatalog;
  upstream: UpstreamClient;
  observer: CacheObserver | undefined;
  now(): number;
  warn(data: object, msg: string): void;
}

/** The response cache over Redis when the gateway has one, else over this process's memory. */
export function createResponseCache(s: ResponseCacheSetup): ResponseCache {
  const storage = s.redis
    ? new RedisCacheStorage(s.redis.client, s.redis.keyPrefix, s.redis.timeoutMs)
    : new MemoryCacheStorage(s.config.memoryMaxBytes);
  const model = s.config.semantic.embeddingModel;
  const embedder = model ? new Embedder(s.catalog, s.upstream, model, s.config.semantic.dimensions) : undefined;
  return new ResponseCache({ config: s.config, storage, catalog: s.catalog, embedder, now: s.now, observer: s.observer, warn: s.warn });
}

/** Its lookup as the last pre-upstream hook: a guardrail (a plugin's hook) refuses a request before the cache could answer it. */
export function registerCacheHook(hooks: HookRegistry, cache: ResponseCache): void {
  hooks.add('response-cache', 'pre-upstream', (ex) => cache.lookup(ex));
}

export { ResponseCache } from './service.js';
export type { CacheDef, CacheRequest, ResponseCacheApi } from '../pipeline/plugin.js';
export type { CacheEntry, CacheHit, CacheOutcome, CacheResult, CacheSetting } from '../model/cache.js';
