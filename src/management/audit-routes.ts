import { microsToUsd } from '../lib/money.js';
import type { Store } from '../store/types.js';
import type { RouteKey } from './api-types.js';

type Obj = Record<string, unknown>;

/**
 * What a mutating management route records in the audit log (docs/management.md,
 * "Audit log"): its action, the type of its target, where the target's id comes from,
 * and optionally how to read the target's state, read before and after the handler so
 * that the row holds the fields that changed, from what to what. Without `state` the
 * row's `after` is the request body (secrets masked).
 */
export interface RouteAudit {
  action: string;
  target: string;
  /** The target's id: by default the route's last path parameter, else the response's `id`. */
  id?: (params: Obj, result: Obj) => string | null;
  /** The org, where the route has no `:org`: read from the response. */
  org?: (result: Obj) => string | null;
  /** The target's state, read before and after the handler. */
  state?: (store: Store, orgId: string, id: string) => Promise<Obj | null>;
  /** Also recorded, with the error code, when the handler refuses (a failed sign-in). */
  failure?: string;
  /** The actor is the user in the response (signing in: nobody is signed in before). */
  actorFromResult?: boolean;
}

/**
 * Every route but reads: what each records. A mutating route missing here fails at boot,
 * and once `npm run gen:api` has listed it in api-types.ts, does not compile.
 */
export type MutatingRouteKey = Exclude<RouteKey, `GET ${string}`>;

export const keyState = async (store: Store, orgId: string, id: string): Promise<Obj | null> => {
  const k = await store.tenancy.getKey(orgId, id);
  return k ? { name: k.name, limits: k.limits, expires_at: k.expiresAt, allowed_models: k.allowedModels, revoked_at: k.revokedAt, cache: k.cache ?? null } : null;
};
export const projectState = async (store: Store, orgId: string, id: string): Promise<Obj | null> => {
  const p = await store.tenancy.getProject(orgId, id);
  return p ? { name: p.name, limits: p.limits, default_max_tokens: p.defaultMaxTokens, unsupported_params: p.unsupportedParams, cache: p.cache ?? null, guardrails: p.guardrails, body_logging: p.bodyLogging } : null;
};
export const balanceState = async (store: Store, orgId: string): Promise<Obj | null> => {
  const org = await store.getOrg(orgId);
  return org ? { balance_usd: microsToUsd(org.balanceMicros) } : null;
};
export const providerKeyState = async (store: Store, orgId: string, id: string): Promise<Obj | null> => {
  const k = (await store.providerKeys.list(orgId)).find((p) => p.providerId === id);
  return k ? { key: k.masked, updated_at: k.updatedAt } : { key: null, updated_at: null };
};
const balanceAlertState = async (store: Store, orgId: string): Promise<Obj | null> => {
  const alert = await store.webhooks.balanceAlert(orgId);
  return { below_usd: alert?.belowMicros == null ? null : microsToUsd(alert.belowMicros) };
};
const memberState = async (store: Store, orgId: string, id: string): Promise<Obj | null> => ({ role: (await store.accounts.roleIn(orgId, id)) ?? null });

const fromResult = (_p: Obj, r: Obj): string | null => (typeof r.id === 'string' ? r.id : null);

export const ROUTE_AUDIT: Record<MutatingRouteKey, RouteAudit> = {
  'POST /api/v1/session': { action: 'session.sign_in', target: 'user', id: fromResult, failure: 'session.sign_in_failed', actorFromResult: true },
  'DELETE /api/v1/session': { action: 'session.sign_out', target: 'session', id: () => null },
  'POST /api/v1/tokens': { action: 'token.create', target: 'token', id: fromResult },
  'DELETE /api/v1/tokens/:token': { action: 'token.revoke', target: 'token' },
  'POST /api/v1/invitations/:invitation/accept': { action: 'invitation.accept', target: 'invitation', org: (r) => ((r.invitation as Obj | undefined)?.org_id as string) ?? null },
  'POST /api/v1/invitations/:invitation/decline': { action: 'invitation.decline', target: 'invitation', org: (r) => (r.org_id as string) ?? null },
  'POST /api/v1/reload': { action: 'config.reload', target: 'config', id: () => null },
  'POST /api/v1/orgs': { action: 'org.create', target: 'org', id: fromResult, org: (r) => (r.id as string) ?? null },
  'POST /api/v1/orgs/:org/projects': { action: 'project.create', target: 'project', id: fromResult },
  'PATCH /api/v1/orgs/:org/projects/:project': { action: 'project.update', target: 'project', state: projectState },
  'POST /api/v1/orgs/:org/projects/:project/keys': { action: 'key.create', target: 'key', id: fromResult },
  'PATCH /api/v1/orgs/:org/keys/:key': { action: 'key.update_limits', target: 'key', state: keyState },
  'DELETE /api/v1/orgs/:org/keys/:key': { action: 'key.revoke', target: 'key', state: keyState },
  'POST /api/v1/orgs/:org/credits': { action: 'credits.add', target: 'org', id: (p) => p.org as string, state: balanceState },
  'PUT /api/v1/orgs/:org/provider-keys/:provider': { action: 'provider_key.set', target: 'provider_key', state: providerKeyState },
  'DELETE /api/v1/orgs/:org/provider-keys/:provider': { action: 'provider_key.delete', target: 'provider_key', state: providerKeyState },
  'POST /api/v1/orgs/:org/members': {
    action: 'member.add', target: 'member',
    id: (_p, r) => ((r.member as Obj | null)?.user_id as string | undefined) ?? ((r.invitation as Obj | null)?.id as string | undefined) ?? null,
  },
  'PATCH /api/v1/orgs/:org/members/:user': { action: 'member.update_role', target: 'member', state: memberState },
  'DELETE /api/v1/orgs/:org/members/:user': { action: 'member.remove', target: 'member', state: memberState },
  'DELETE /api/v1/orgs/:org/invitations/:invitation': { action: 'invitation.revoke', target: 'invitation' },
  // The caller's own password: the actor is the target; nothing of either password is written (masked).
  'PUT /api/v1/me/password': { action: 'user.change_password', target: 'user', id: () => null },
  'PATCH /api/v1/users/:user': { action: 'user.set_active', target: 'user' },
  // The new secret is in the response, never in the row: `after` is the request (the grace period).
  'POST /api/v1/orgs/:org/keys/:key/rotate': { action: 'key.rotate', target: 'key' },
  'POST /api/v1/orgs/:org/webhooks': { action: 'webhook.create', target: 'webhook', id: fromResult },
  'DELETE /api/v1/orgs/:org/webhooks/:webhook': { action: 'webhook.delete', target: 'webhook' },
  'POST /api/v1/orgs/:org/webhooks/:webhook/test': { action: 'webhook.test', target: 'webhook' },
  'PUT /api/v1/orgs/:org/balance-alert': { action: 'balance_alert.set', target: 'org', id: (p) => p.org as string, state: balanceAlertState },
};
