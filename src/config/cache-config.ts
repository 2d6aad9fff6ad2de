import type { ResponseCacheConfig } from '../model/cache.js';

/** gateway.yaml `response_cache` as written (snake_case; config/gateway.schema.json validates it). */
export interface RawResponseCacheConfig {
  memory_max_bytes?: number;
  max_entry_bytes?: number;
  ttl_s?: number;
  max_ttl_s?: number;
  hit_price?: number;
  max_temperature?: number;
  semantic?: { embedding_model?: string; dimensions?: number; threshold?: number; max_entries_per_project?: number };
}

/** The response cache's settings with their defaults (docs/cache.md "Configuration"). */
export function responseCacheConfig(raw: RawResponseCacheConfig | undefined): ResponseCacheConfig {
  return {
    memoryMaxBytes: raw?.memory_max_bytes ?? 64 * 1024 * 1024,
    maxEntryBytes: raw?.max_entry_bytes ?? 4 * 1024 * 1024,
    maxTtlS: raw?.max_ttl_s ?? 30 * 24 * 3600,
    defaults: {
      ttl_s: raw?.ttl_s ?? 3600,
      scope: 'org',
      hit_price: raw?.hit_price ?? 0,
      max_temperature: raw?.max_temperature ?? 1,
      cache_all: false,
      threshold: raw?.semantic?.threshold ?? 0.95,
    },
    semantic: {
      embeddingModel: raw?.semantic?.embedding_model,
      dimensions: raw?.semantic?.dimensions,
      maxEntriesPerProject: raw?.semantic?.max_entries_per_project ?? 500,
    },
  };
}
