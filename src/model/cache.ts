import type { TokenCounts } from './usage.js';

/*
 * The response cache's vocabulary (docs/cache.md): the settings a project or key turns it
 * on with, what gateway.yaml bounds it with, and what one request's cache did.
 */

const CACHE_MODES = ['off', 'exact', 'semantic'] as const;
export type CacheMode = (typeof CACHE_MODES)[number];

/** The JSON Schema of a `cache` setting in the management API (PATCH on projects and keys); null clears it. */
export const CACHE_SETTING_SCHEMA = {
  type: ['object', 'null'],
  additionalProperties: false,
  description: 'Response cache of the project\'s or key\'s requests (docs/cache.md); a key\'s fields win over its project\'s; null clears it',
  properties: {
    mode: { type: 'string', enum: CACHE_MODES, description: 'off (default), exact, or semantic (exact first, then by meaning)' },
    ttl_s: { type: 'integer', minimum: 1, maximum: 30 * 24 * 3600, description: 'Seconds a stored reply is served' },
    scope: { type: 'string', enum: ['org', 'project'], description: 'org: entries shared by the org\'s projects; project: each project its own' },
    hit_price: { type: 'number', minimum: 0, maximum: 1, description: 'Fraction of the original cost a hit is charged (default 0)' },
    max_temperature: { type: 'number', minimum: 0, maximum: 2, description: 'Requests above this temperature are not cached' },
    cache_all: { type: 'boolean', description: 'Also cache n > 1, temperatures above the ceiling, and tool results marked uncacheable' },
    threshold: { type: 'number', minimum: 0, maximum: 1, description: 'Semantic mode: least cosine similarity that is a hit (default 0.95)' },
  },
} as const;

type CacheFields = (typeof CACHE_SETTING_SCHEMA)['properties'];
/**
 * A project's or a key's `cache` setting (PATCH on projects and keys), as its schema above
 * describes each field. Every field is optional: a key's fields win over its project's,
 * the project's over gateway.yaml's.
 */
export type CacheSetting = {
  -readonly [K in keyof CacheFields]?: CacheFields[K] extends { enum: readonly (infer E)[] } ? E : CacheFields[K] extends { type: 'boolean' } ? boolean : number;
};

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
