import type { FastifyReply, FastifyRequest } from 'fastify';
import { changedFields } from '../lib/mask-secrets.js';
import type { AuditActor, AuditEntry } from '../model/audit.js';
import { GatewayError } from '../lib/errors.js';
import type { Store } from '../store/types.js';
import type { RouteAudit } from './audit-routes.js';

type Obj = Record<string, unknown>;
type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The caller of a management request as the audit log names it: the session's user, or the token and its user. */
function actorOf(request: FastifyRequest): AuditActor {
  const c = request.caller;
  if (!c) return { type: 'anonymous', userId: null, email: null, tokenId: null };
  return { type: c.via === 'token' ? 'token' : 'user', userId: c.user.id, email: c.user.email, tokenId: c.tokenId ?? null };
}

/** Where the request came from: its address (as fastify's trustProxy sees it) and its user agent. */
function originOf(request: FastifyRequest): { ip: string | null; userAgent: string | null } {
  const ua = request.headers['user-agent'];
  return { ip: request.ip ?? null, userAgent: typeof ua === 'string' ? ua : null };
}

/**
 * Appends one row for a change made through the management API: the small call a
 * route (or a plugin) uses to record what the route table cannot see. Secrets in
 * `before`/`after` are masked by the store.
 */
export async function recordChange(store: Store, request: FastifyRequest, change: Omit<AuditEntry, 'actor' | 'ip' | 'userAgent'> & { actor?: AuditActor }): Promise<void> {
  await store.auditLog.append({ ...change, actor: change.actor ?? actorOf(request), ...originOf(request) });
}

const asObj = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

function lastParam(url: string, params: Obj): string | null {
  const names = [...url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] as string).filter((n) => n !== 'org');
  const name = names[names.length - 1];
  return name === undefined ? null : String(params[name]);
}

/**
 * A management route's handler wrapped so that a call that succeeds appends exactly one
 * audit row (and, for sign-in, a refused one too): the central place every mutating
 * route goes through, so none can skip the log. The row is written before the answer
 * is sent: once a client sees the change, the log has it.
 */
export function audited(store: Store, url: string, spec: RouteAudit, handler: Handler): Handler {
  return async (request, reply) => {
    const params = asObj(request.params);
    const orgParam = typeof params.org === 'string' ? params.org : null;
    const paramId = lastParam(url, params);
    const body = asObj(request.body);
    const stateId = paramId ?? orgParam;
    const before = spec.state && orgParam !== null && stateId !== null ? await spec.state(store, orgParam, stateId) : null;
    let result: unknown;
    try {
      result = await handler(request, reply);
    } catch (err) {
      if (spec.failure) {
        await recordChange(store, request, {
          action: spec.failure, orgId: null, targetType: spec.target, targetId: null, before: null,
          after: { ...body, error: err instanceof GatewayError ? err.code : 'error' },
          actor: { type: 'anonymous', userId: null, email: typeof body.email === 'string' ? body.email : null, tokenId: null },
        });
      }
      throw err;
    }
    const r = asObj(result);
    const targetId = spec.id ? spec.id(params, r) : paramId ?? (typeof r.id === 'string' ? r.id : null);
    let change: { before: Obj | null; after: Obj | null };
    if (spec.state && orgParam !== null && stateId !== null) {
      const now = await spec.state(store, orgParam, stateId);
      change = changedFields(before ?? {}, now ?? {});
      if (request.method === 'POST') change.after = { ...change.after, request: body };
    } else {
      change = { before: null, after: request.method === 'DELETE' ? null : body };
    }
    const actor: AuditActor | undefined = spec.actorFromResult
      ? { type: 'user', userId: typeof r.id === 'string' ? r.id : null, email: typeof r.email === 'string' ? r.email : null, tokenId: null }
      : undefined;
    await recordChange(store, request, {
      action: spec.action, orgId: orgParam ?? spec.org?.(r) ?? null, targetType: spec.target, targetId, ...change, ...(actor ? { actor } : {}),
    });
    return result;
  };
}

/** A plugin's mutating org route: recorded by its method and path, the body as `after`. */
export function auditedPluginRoute(store: Store, method: string, url: string, tag: string, handler: Handler): Handler {
  return audited(store, url, { action: `${tag}.${method.toLowerCase()}`, target: tag, id: (p) => lastParam(`/api/v1/orgs/:org${url}`, p) }, handler);
}
