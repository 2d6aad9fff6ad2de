import type { TokenCounts } from './usage.js';

/*
 * The response cache's vocabulary (docs/cache.md): the settings a project or key turns it
 * on with, what gateway.yaml bounds it with, and what one request's cache did.
 */

const CACHE_MODES = ['off', 'exact', 'semantic'] as const;
export type CacheMode = (typeof CACHE_MODES)[number];

/**
 * A project's or a key's `cache` setting (PATCH on projects and keys). Every field is
 * optional: a key's fields win over its project's, the project's over gateway.yaml's.
 */
export interface CacheSetting {
  mode?: CacheMode;
  /** How long a stored reply is served (seconds). */
  ttl_s?: number;
  /** `org` (default): one entry serves every project of the org; `project`: each project its own. */
  scope?: 'org' | 'project';
  /** Fraction of the original cost a hit is charged (0–1). */
  hit_price?: number;
  /** Requests with a higher temperature are not cached (unless `cache_all`). */
  max_temperature?: number;
  /** Cache what is otherwise left out: `n` > 1, temperature above the ceiling, tool results marked uncacheable. */
  cache_all?: boolean;
  /** Semantic mode: the least cosine similarity that is a hit (0–1). */
  threshold?: number;
}

/** gateway.yaml `response_cache` (config/gateway.schema.json). */
export interface ResponseCacheConfig {
  /** The in-memory store's bound (bytes) when no Redis is configured; least recently used entries go first. */
  memoryMaxBytes: number;
  /** A reply larger than this (its stored form) is not stored. */
  maxEntryBytes: number;
  defaults: Required<Omit<CacheSetting, 'mode'>>;
  /** The longest `ttl_s` a setting or a request may ask for. */
  maxTtlS: number;
  semantic: {
    /** The embedding model semantic lookups use (billed to the org; docs/cache.md); undefined: semantic mode acts as exact. */
    embeddingModel: string | undefined;
    /** Dimensions asked of the embedding model (models that accept `dimensions`). */
    dimensions: number | undefined;
    /** Entries kept in one project's index per model; the oldest go first. */
    maxEntriesPerProject: number;
  };
}

/** What one request's cache did: the reply's `x-tollgate-cache` and the log row's `cache` columns. */
export type CacheResult = 'hit' | 'miss' | 'bypass';

/** A stored reply: the plugin's format-neutral form of it, with what it cost when it was made. */
export interface CacheEntry<E = unknown> {
  v: 1;
  /** When it was stored (ms since epoch). */
  at: number;
  /** Seconds it is served for (also the store's own expiry; checked against the gateway's clock too). */
  ttlS: number;
  /** The whole cost of the original request (micro-USD): what a hit saves, less its own charge. */
  costMicros: number;
  /** The token counts the original request was billed for. */
  usage: TokenCounts | null;
  body: E;
}

/** A hit as a plugin replays it. */
export interface CacheHit<E = unknown> {
  entry: CacheEntry<E>;
  /** How old the entry is (ms). */
  ageMs: number;
  /** The charge of a hit for an amount of the original cost (micro-USD): `hit_price` of it, rounded down. */
  price(micros: number): number;
}

/** What the request log and the metrics learn of a request's cache. */
export interface CacheOutcome {
  result: CacheResult;
  ageMs: number | null;
  savedMicros: number;
}
