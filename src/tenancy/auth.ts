import { hash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../lib/errors.js';
import { randomBase62 } from '../lib/ids.js';
import type { Project } from '../store/tenancy.js';
import type { ApiKeyRecord, Org, Store } from '../store/types.js';
import { TtlCache } from '../lib/ttl-cache.js';

const KEY_PATTERN = /^tg_[A-Za-z0-9]{40}$/;
/** `tg_` and the first 8 random characters: readable, unique, kept in the database. */
const PREFIX_LENGTH = 11;

/**
 * SHA-256 of a whole key: what is stored (hex) and what a presented key is compared with.
 * The one-shot `hash` builds no Hash object: half the CPU of createHash's on every request.
 */
function keyDigest(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

const hashKey = (key: string): string => keyDigest(key).toString('hex');

/** A new API key. The whole key is shown once; only its prefix and hash are stored. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = `tg_${randomBase62(40)}`;
  return { key, prefix: key.slice(0, PREFIX_LENGTH), hash: hashKey(key) };
}

/**
 * A new secret for a key being rotated: its prefix (the key's readable name and lookup)
 * is kept, the 32 characters after it are new, so the key keeps its id, limits and usage.
 */
export function rotatedApiKey(prefix: string): { key: string; hash: string } {
  const key = `${prefix}${randomBase62(40 - (PREFIX_LENGTH - 3))}`;
  return { key, hash: hashKey(key) };
}

/**
 * The key from `Authorization: Bearer <key>`, or from one of the route's own key
 * headers (lower-case names: `x-api-key` for Anthropic SDKs, `x-goog-api-key` for Google's),
 * or last from one of its key query parameters (`?key=` on the Gemini routes).
 */
export function extractKey(
  headers: Record<string, string | string[] | undefined>, keyHeaders: readonly string[] = [],
  query: Record<string, unknown> | undefined = undefined, keyQuery: readonly string[] = [],
): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.length > 0) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1] : '';
  }
  for (const name of keyHeaders) {
    const x = headers[name];
    if (typeof x === 'string') return x;
  }
  for (const name of keyQuery) {
    const x = query?.[name];
    if (typeof x === 'string') return x;
  }
  return undefined;
}

function hashEquals(hex: string, actual: Buffer): boolean {
  const expected = Buffer.from(hex, 'hex');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** A key that authenticated, with its org and project. */
export interface AuthenticatedKey { key: ApiKeyRecord; org: Org; project: Project | undefined }

/** Keys whose lookup is kept; past it the least recently used is read again when it comes back. */
const MAX_CACHED_KEYS = 10_000;

/**
 * Resolves bearer keys to their org and project. Lookups are cached for `ttlMs`
 * (default 1 s, `cache.ttl_ms`), so the database is not read on every request. A
 * revocation is pushed to every instance (src/tenancy/invalidation.ts) and `evict`ed at once;
 * the TTL bounds how long a missed push is noticed. Expiry is checked at every
 * request against the clock, cached or not.
 */
export class Authenticator {
  private readonly cache;

  constructor(private readonly store: Store, ttlMs = 1000, private readonly now: () => number = Date.now) {
    this.cache = new TtlCache<string, AuthenticatedKey>({ max: MAX_CACHED_KEYS, ttlMs, now });
  }

  async authenticate(key: string | undefined): Promise<AuthenticatedKey> {
    if (key === undefined) throw new GatewayError('missing_api_key');
    if (!KEY_PATTERN.test(key)) throw new GatewayError('invalid_api_key');
    const prefix = key.slice(0, PREFIX_LENGTH);
    let entry = this.cache.get(prefix);
    if (!entry) {
      entry = await this.load(prefix);
      if (!entry) throw new GatewayError('invalid_api_key');
    }
    const actual = keyDigest(key);
    // After a rotation the old secret is accepted until its grace ends, checked against the clock, cached or not.
    const previous = entry.key.previousHash !== null && entry.key.previousExpiresAt !== null && entry.key.previousExpiresAt > this.now();
    const matches = hashEquals(entry.key.hash, actual) || (previous && hashEquals(entry.key.previousHash ?? '', actual));
    if (!matches || entry.key.revokedAt !== null) throw new GatewayError('invalid_api_key');
    if (entry.key.expiresAt !== null && entry.key.expiresAt <= this.now()) {
      throw new GatewayError('api_key_expired', [entry.key.prefix, new Date(entry.key.expiresAt).toISOString()]);
    }
    return entry;
  }

  /** Forgets a key (by prefix), or every key (null): the next request reads the database. */
  evict(prefix: string | null): void {
    if (prefix === null) this.cache.clear();
    else this.cache.delete(prefix);
  }

  private async load(prefix: string): Promise<AuthenticatedKey | undefined> {
    const readAt = this.cache.epoch;
    const key = await this.store.findApiKey(prefix);
    const org = key && (await this.store.getOrg(key.orgId));
    if (!key || !org) return undefined;
    const entry = { key, org, project: await this.store.tenancy.getProject(org.id, key.projectId) };
    // Not cached when an eviction came in meanwhile: this read may predate the revocation it announced.
    this.cache.set(prefix, entry, readAt);
    return entry;
  }
}
