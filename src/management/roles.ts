import type { OrgRole } from '../store/accounts.js';

/**
 * Who may call a management route:
 * - `public`: anyone (signing in, the OpenAPI document);
 * - `user`: any signed-in user or token (their own account, sessions, tokens, org list);
 * - `operator`: the instance's operators (create orgs, mint credits);
 * - `member` < `admin` < `owner`: a role in the org named by the route's `:org`, which an
 *   operator holds in every org. A caller with no role in that org gets 404, as if it did
 *   not exist; a role too low gets 403.
 */
export type Access = 'public' | 'user' | 'operator' | OrgRole;

/** The org roles in rising order of rights. */
const RANK: Record<OrgRole, number> = { member: 1, admin: 2, owner: 3 };

/** True when `held` (an org role, or `operator`, which holds every role) satisfies `needed`. */
export function roleSatisfies(held: OrgRole | 'operator', needed: OrgRole): boolean {
  return held === 'operator' || RANK[held] >= RANK[needed];
}

export const isOrgAccess = (a: Access): a is OrgRole => a in RANK;

/**
 * Every management route of the core and the access it needs: the one place role
 * checks are declared. Registering a route missing here fails at boot, and a test
 * checks that every entry is served. Plugin routes (`api.orgRoute`) declare their role
 * in their definition and are all org-scoped.
 */
export const ROUTE_ACCESS = {
  'GET /api/openapi.json': 'public',
  'GET /api/v1/session': 'public',
  'POST /api/v1/session': 'public',
  'DELETE /api/v1/session': 'user',
  'GET /api/v1/session/options': 'public',
  'GET /api/v1/session/oidc/start': 'public',
  'GET /api/v1/session/oidc/callback': 'public',
  'GET /api/v1/me': 'user',
  'PUT /api/v1/me/password': 'user',
  'PATCH /api/v1/users/:user': 'operator',
  'GET /api/v1/tokens': 'user',
  'POST /api/v1/tokens': 'user',
  'DELETE /api/v1/tokens/:token': 'user',
  'GET /api/v1/invitations': 'user',
  'POST /api/v1/invitations/:invitation/accept': 'user',
  'POST /api/v1/invitations/:invitation/decline': 'user',
  'GET /api/v1/orgs': 'user',
  'POST /api/v1/orgs': 'operator',
  'GET /api/v1/orgs/:org': 'member',
  'GET /api/v1/orgs/:org/projects': 'member',
  'POST /api/v1/orgs/:org/projects': 'admin',
  'GET /api/v1/orgs/:org/projects/:project': 'member',
  'PATCH /api/v1/orgs/:org/projects/:project': 'admin',
  'GET /api/v1/orgs/:org/keys': 'member',
  'GET /api/v1/orgs/:org/projects/:project/keys': 'member',
  'POST /api/v1/orgs/:org/projects/:project/keys': 'admin',
  'GET /api/v1/orgs/:org/keys/:key': 'member',
  'PATCH /api/v1/orgs/:org/keys/:key': 'admin',
  'DELETE /api/v1/orgs/:org/keys/:key': 'admin',
  'POST /api/v1/orgs/:org/keys/:key/rotate': 'admin',
  'GET /api/v1/orgs/:org/logs': 'member',
  'GET /api/v1/orgs/:org/logs/:id': 'member',
  'GET /api/v1/orgs/:org/usage': 'member',
  'GET /api/v1/orgs/:org/cache': 'member',
  'GET /api/v1/orgs/:org/overview': 'member',
  'GET /api/v1/orgs/:org/logs/export': 'member',
  'GET /api/v1/orgs/:org/latency': 'member',
  'GET /api/v1/orgs/:org/credits': 'member',
  'POST /api/v1/orgs/:org/credits': 'operator',
  'GET /api/v1/orgs/:org/provider-keys': 'admin',
  'PUT /api/v1/orgs/:org/provider-keys/:provider': 'admin',
  'DELETE /api/v1/orgs/:org/provider-keys/:provider': 'admin',
  'GET /api/v1/orgs/:org/members': 'member',
  'POST /api/v1/orgs/:org/members': 'owner',
  'PATCH /api/v1/orgs/:org/members/:user': 'owner',
  'DELETE /api/v1/orgs/:org/members/:user': 'owner',
  'GET /api/v1/orgs/:org/invitations': 'owner',
  'DELETE /api/v1/orgs/:org/invitations/:invitation': 'owner',
  'GET /api/v1/orgs/:org/webhooks': 'admin',
  'POST /api/v1/orgs/:org/webhooks': 'admin',
  'DELETE /api/v1/orgs/:org/webhooks/:webhook': 'admin',
  'POST /api/v1/orgs/:org/webhooks/:webhook/test': 'admin',
  'GET /api/v1/orgs/:org/webhooks/:webhook/deliveries': 'admin',
  'GET /api/v1/orgs/:org/audit': 'admin',
  'GET /api/v1/audit': 'operator',
  'GET /api/v1/deployments': 'operator',
  'POST /api/v1/reload': 'operator',
  'GET /api/v1/orgs/:org/balance-alert': 'admin',
  'PUT /api/v1/orgs/:org/balance-alert': 'owner',
} as const satisfies Record<string, Access>;

export type RouteKey = keyof typeof ROUTE_ACCESS;
