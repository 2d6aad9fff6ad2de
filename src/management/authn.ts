import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../lib/errors.js';
import type { OrgRole, User } from '../store/accounts.js';
import type { Org, Store } from '../store/types.js';
import { bearer, hashMatches, ownOrigin, readCookie, requestOrigin, SESSION_COOKIE, sha256, tokenPrefix } from './credentials.js';
import { isOrgAccess, roleSatisfies, type Access } from './roles.js';

/** Who is calling: a signed-in user through their session cookie, or one of their tokens. */
export interface Caller {
  user: User;
  via: 'session' | 'token';
  /** The session's id (the hash of its cookie), to end it on sign-out. */
  sessionId: string | undefined;
  /** The management token's id (`tok_…`), for the audit log; undefined for a session. */
  tokenId?: string;
}

/** The org a route is about, and the caller's role in it (`operator`: the instance's operator, not a member). */
export interface OrgScope {
  org: Org;
  role: OrgRole | 'operator';
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | undefined;
    orgScope: OrgScope | undefined;
  }
  interface FastifyContextConfig {
    /** Who may call a management route (src/management/roles.ts). */
    access?: Access;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The caller of a route that is not public; the hook has set it. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new GatewayError('authentication_required', ['Sign in first']);
  return request.caller;
}

/** The org of an org-scoped route, checked by the hook. */
export function scopeOf(request: FastifyRequest): OrgScope {
  if (!request.orgScope) throw new GatewayError('not_found', ['No such organization']);
  return request.orgScope;
}

/**
 * Authenticates and authorises a management request before its body is read
 * (fastify's onRequest), in this order: who is calling (401), whether a signed-in
 * browser's state-changing request comes from the gateway's own origin (403, CSRF),
 * whether the org exists for the caller (404: another org's resources are never
 * confirmed), and whether the caller's role suffices (403).
 */
export async function authorize(store: Store, request: FastifyRequest, access: Access): Promise<void> {
  if (access === 'public') {
    // Signing in is public, but a browser may not be made to sign in from another site (login CSRF).
    const origin = requestOrigin(request);
    if (request.method !== 'GET' && origin !== undefined && origin !== ownOrigin(request)) throw refusedOrigin(request, origin);
    return;
  }
  const caller = await identify(store, request);
  request.caller = caller;
  if (caller.via === 'session' && !SAFE_METHODS.has(request.method)) {
    const origin = requestOrigin(request);
    if (origin !== ownOrigin(request)) throw refusedOrigin(request, origin);
  }
  const orgId = (request.params as { org?: unknown } | undefined)?.org;
  if (typeof orgId === 'string') {
    request.orgScope = await orgScope(store, caller.user, orgId);
    if (isOrgAccess(access) && !roleSatisfies(request.orgScope.role, access)) throw new GatewayError('permission_denied', [access, request.orgScope.role]);
  }
  if (access === 'operator' && !caller.user.operator) throw new GatewayError('permission_denied', ['operator', request.orgScope?.role ?? 'not an operator']);
}

function refusedOrigin(request: FastifyRequest, origin: string | undefined): GatewayError {
  return new GatewayError('cross_origin_refused', [origin ?? '(no Origin or Referer header)', ownOrigin(request)]);
}

async function identify(store: Store, request: FastifyRequest): Promise<Caller> {
  const presented = bearer(request);
  if (presented !== undefined) {
    const prefix = tokenPrefix(presented);
    const token = prefix === undefined ? undefined : await store.accounts.findToken(prefix);
    if (!token || token.revokedAt !== null || !hashMatches(presented, token.hash)) throw new GatewayError('invalid_token');
    const user = await store.accounts.getUser(token.userId);
    if (!user) throw new GatewayError('invalid_token');
    if (!user.active) throw new GatewayError('account_deactivated');
    await store.accounts.touchToken(token.id);
    return { user, via: 'token', sessionId: undefined, tokenId: token.id };
  }
  const secret = readCookie(request, SESSION_COOKIE);
  if (secret === undefined || secret === '') {
    throw new GatewayError('authentication_required', ['Sign in (POST /api/v1/session) or send "Authorization: Bearer tgm_…" with a management token']);
  }
  const sessionId = sha256(secret);
  const user = await store.accounts.sessionUser(sessionId);
  if (!user) throw new GatewayError('authentication_required', ['The session has expired or ended: sign in again (POST /api/v1/session)']);
  return { user, via: 'session', sessionId };
}

/** The user of the request's session cookie, or null (no cookie, or a session that ended): for the console's first look. */
export async function sessionUser(store: Store, request: FastifyRequest): Promise<User | null> {
  const secret = readCookie(request, SESSION_COOKIE);
  if (secret === undefined || secret === '') return null;
  return (await store.accounts.sessionUser(sha256(secret))) ?? null;
}

async function orgScope(store: Store, user: User, orgId: string): Promise<OrgScope> {
  const org = await store.getOrg(orgId);
  const role = org && (user.operator ? 'operator' : await store.accounts.roleIn(org.id, user.id));
  if (!org || !role) throw new GatewayError('not_found', [`No organization ${orgId}`]);
  return { org, role };
}
