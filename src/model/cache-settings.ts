import type { IncomingHttpHeaders } from 'node:http';
import type { CacheMode, CacheSetting, ResponseCacheConfig } from './cache.js';

/** A request's own say (`x-tollgate-cache`, `cache-control`): read, write, and a TTL of its own. */
export interface RequestDirective {
  read: boolean;
  write: boolean;
  ttlS: number | undefined;
}

/**
 * `x-tollgate-cache: no-cache` (do not read, still write), `no-store` (neither), `ttl=<s>`;
 * several may be given, comma-separated. `cache-control: no-store` is honoured as `no-store`,
 * and `cache-control: no-cache` as `no-cache`.
 */
export function requestDirective(headers: IncomingHttpHeaders): RequestDirective {
  const d: RequestDirective = { read: true, write: true, ttlS: undefined };
  const words = [headers['x-tollgate-cache'], headers['cache-control']]
    .flatMap((h) => (Array.isArray(h) ? h : h === undefined ? [] : [h]))
    .flatMap((h) => h.split(','))
    .map((w) => w.trim().toLowerCase());
  for (const w of words) {
    if (w === 'no-store') {
      d.read = false;
      d.write = false;
    } else if (w === 'no-cache') {
      d.read = false;
    } else if (w.startsWith('ttl=')) {
      const s = Number(w.slice(4));
      if (Number.isInteger(s) && s > 0) d.ttlS = s;
    }
  }
  return d;
}

/** The settings in force for a request: the key's fields over its project's, over gateway.yaml's. */
export interface EffectiveSettings extends Required<Omit<CacheSetting, 'mode'>> {
  mode: CacheMode;
}

export function effectiveSettings(config: ResponseCacheConfig, project: CacheSetting | null | undefined, key: CacheSetting | null | undefined): EffectiveSettings {
  const merged: EffectiveSettings = { mode: 'off', ...config.defaults };
  for (const layer of [project, key]) {
    if (!layer) continue;
    for (const [k, v] of Object.entries(layer)) if (v !== undefined && v !== null) (merged as unknown as Record<string, unknown>)[k] = v;
  }
  merged.ttl_s = Math.min(merged.ttl_s, config.maxTtlS);
  return merged;
}

/** The JSON Schema of a `cache` setting in the management API (PATCH on projects and keys); null clears it. */
export const CACHE_SETTING_SCHEMA = {
  type: ['object', 'null'],
  additionalProperties: false,
  description: 'Response cache of the project\'s or key\'s requests (docs/cache.md); a key\'s fields win over its project\'s; null clears it',
  properties: {
    mode: { type: 'string', enum: ['off', 'exact', 'semantic'], description: 'off (default), exact, or semantic (exact first, then by meaning)' },
    ttl_s: { type: 'integer', minimum: 1, maximum: 30 * 24 * 3600, description: 'Seconds a stored reply is served' },
    scope: { type: 'string', enum: ['org', 'project'], description: 'org: entries shared by the org\'s projects; project: each project its own' },
    hit_price: { type: 'number', minimum: 0, maximum: 1, description: 'Fraction of the original cost a hit is charged (default 0)' },
    max_temperature: { type: 'number', minimum: 0, maximum: 2, description: 'Requests above this temperature are not cached' },
    cache_all: { type: 'boolean', description: 'Also cache n > 1, temperatures above the ceiling, and tool results marked uncacheable' },
    threshold: { type: 'number', minimum: 0, maximum: 1, description: 'Semantic mode: least cosine similarity that is a hit (default 0.95)' },
  },
} as const;

/** A stored setting read back (JSON text on SQLite, parsed JSON on PostgreSQL); null when none. */
export function parseCacheSetting(raw: unknown): CacheSetting | null {
  if (raw === null || raw === undefined || raw === '') return null;
  const value: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
  return typeof value === 'object' && value !== null ? (value as CacheSetting) : null;
}
