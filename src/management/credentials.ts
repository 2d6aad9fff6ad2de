import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { randomBase62 } from '../lib/ids.js';

/** The console's session cookie. */
export const SESSION_COOKIE = 'tollgate_session';
/** A session lasts this long from sign-in, then the console signs in again. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

const TOKEN_PATTERN = /^tgm_[A-Za-z0-9]{40}$/;
/** `tgm_` and the first 8 random characters: readable in lists, unique, kept in the database. */
const TOKEN_PREFIX_LENGTH = 12;

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A new session secret (for the cookie) and its id (its hash: the database never holds the secret). */
export function newSession(): { secret: string; id: string } {
  const secret = randomBytes(32).toString('base64url');
  return { secret, id: sha256(secret) };
}

/** A new management token: shown once; only its prefix and hash are stored. */
export function newToken(): { token: string; prefix: string; hash: string } {
  const token = `tgm_${randomBase62(40)}`;
  return { token, prefix: token.slice(0, TOKEN_PREFIX_LENGTH), hash: sha256(token) };
}

/** The prefix to look a presented token up by; undefined when it is not a token's shape. */
export function tokenPrefix(token: string): string | undefined {
  return TOKEN_PATTERN.test(token) ? token.slice(0, TOKEN_PREFIX_LENGTH) : undefined;
}

export function hashMatches(presented: string, storedHex: string): boolean {
  const a = Buffer.from(sha256(presented), 'hex');
  const b = Buffer.from(storedHex, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie of the request (first occurrence), undefined when absent. */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
  }
  return undefined;
}

/**
 * The Set-Cookie value of the session: HttpOnly (no script reads it), SameSite=Lax (not
 * sent on cross-site subrequests), Secure when the gateway is reached over https
 * (fastify's `request.protocol`, which honours X-Forwarded-Proto with `server.trust_proxy`).
 */
export function sessionCookie(request: FastifyRequest, secret: string, maxAgeMs: number): string {
  const attrs = [`${SESSION_COOKIE}=${secret}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}`];
  if (request.protocol === 'https') attrs.push('Secure');
  return attrs.join('; ');
}

/** The Authorization bearer value, '' for a malformed header, undefined when there is none. */
export function bearer(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth !== 'string' || auth.length === 0) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] ?? '';
}

/**
 * The origin a browser says the request came from (`Origin`, else the origin of
 * `Referer`); undefined when it names none.
 */
export function requestOrigin(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== '') return origin.toLowerCase();
  const referer = request.headers.referer;
  if (typeof referer !== 'string' || referer === '') return undefined;
  try {
    return new URL(referer).origin.toLowerCase();
  } catch {
    return 'invalid';
  }
}

/** The gateway's own origin as this request reached it (scheme and Host, behind a trusted proxy as the proxy says). */
export function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`.toLowerCase();
}
