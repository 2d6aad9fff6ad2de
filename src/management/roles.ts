import type { OrgRole } from '../store/accounts.js';

/**
 * Who may call a management route:
 * - `public`: anyone (signing in, the OpenAPI document);
 * - `user`: any signed-in user or token (their own account, sessions, tokens, org list);
 * - `operator`: the instance's operators (create orgs, mint credits);
 * - `member` < `admin` < `owner`: a role in the org named by the route's `:org`, which an
 *   operator holds in every org. A caller with no role in that org gets 404, as if it did
 *   not exist; a role too low gets 403.
 * Each route declares its own (`access` of a ManagementRoute, `role` of a plugin's org
 * route); a route without one fails at boot. The OpenAPI document says it ("Needs: …").
 */
export type Access = 'public' | 'user' | 'operator' | OrgRole;

/** The org roles in rising order of rights. */
const RANK: Record<OrgRole, number> = { member: 1, admin: 2, owner: 3 };

/** True when `held` (an org role, or `operator`, which holds every role) satisfies `needed`. */
export function roleSatisfies(held: OrgRole | 'operator', needed: OrgRole): boolean {
  return held === 'operator' || RANK[held] >= RANK[needed];
}

export const isOrgAccess = (a: Access): a is OrgRole => a in RANK;
