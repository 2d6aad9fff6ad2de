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

/** A stored setting read back (JSON text on SQLite, parsed JSON on PostgreSQL); null when none. */
export function parseCacheSetting(raw: unknown): CacheSetting | null {
  if (raw === null || raw === undefined || raw === '') return null;
  const value: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
  return typeof value === 'object' && value !== null ? (value as CacheSetting) : null;
}
