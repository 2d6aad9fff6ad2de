import { GatewayError, invalidField } from '../lib/errors.js';
import type { Invitation } from '../store/accounts.js';
import { callerOf, scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { changed, found, orgListRoute, route, type ManagementRoute } from './http.js';
import { acceptInvitation, addMember, changeMembership, endInvitation, inviteMember } from '../tenancy/admin.js';
import { conflictAs409 } from './routes-orgs.js';
import { EMAIL, input, list, maybe, obj, params, ROLE, str, time } from './schemas.js';
import { iso, MEMBER, memberView } from './views.js';

/** How long an invitation can be accepted. */
const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

const INVITATION = obj({
  id: str('inv_…'), org_id: str('org_…'), org_name: str(), email: EMAIL, role: ROLE,
  status: str('pending until its invitee accepts or declines it, or an owner revokes it', { enum: ['pending', 'accepted', 'declined', 'revoked'] }),
  created_at: time(), expires_at: time('After this it can no longer be accepted'),
}, { title: 'Invitation' });
const invitationView = (i: Invitation) => ({
  id: i.id, org_id: i.orgId, org_name: i.orgName, email: i.email, role: i.role, status: i.status, created_at: iso(i.createdAt), expires_at: iso(i.expiresAt),
});
/** What `POST …/members` answers: a member added (operators) or an invitation sent (owners). */
const ADDED = obj({
  member: maybe(MEMBER), invitation: maybe(INVITATION),
}, { title: 'MemberAdded', description: 'Exactly one is set: `member` when an operator added the user at once, `invitation` when an invitation was sent' });

/**
 * Members of an org. An owner's "add" is an invitation to an email: the same answer
 * whether an account has that email or not (no probing the instance's users), and nobody
 * joins an org without accepting. An operator, who sees every user anyway, adds directly.
 */
export function memberRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  return [
    orgListRoute({
      url: '/api/v1/orgs/:org/members', access: 'member', tag: 'members', summary: 'The org\'s members and their roles.', item: MEMBER,
      list: async (orgId) => (await store.accounts.listMembers(orgId)).map(memberView),
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/members', access: 'owner', tag: 'members',
      summary: 'An owner invites an email with a role (202, the invitation: the same answer whether a user has that email or not; they join when they accept). '
        + 'An operator adds an existing user at once (201), or with `password` creates the user; an unknown email without one is invited.',
      schema: {
        params: params('org'),
        body: input({ email: EMAIL, role: ROLE, password: str('Operators only, for a new user: their first password (10+ characters)', { maxLength: 1024 }) }, ['email', 'role']),
        response: { 201: ADDED, 202: ADDED },
      },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const caller = callerOf(request).user;
        const b = request.body;
        const email = b.email.toLowerCase();
        if (caller.operator) {
          const member = await conflictAs409(() => addMember(store, org.id, email, b.role, b.password));
          if (member) {
            void reply.code(201);
            return { member: memberView(member), invitation: null };
          }
        } else if (b.password !== undefined) {
          throw invalidField('password', '"password": only an operator creates users; an owner invites an email, and its user accepts');
        }
        const invitation = await inviteMember(store, org.id, email, b.role, caller.id, d.now() + INVITATION_TTL_MS);
        void reply.code(202);
        return { member: null, invitation: invitationView(invitation) };
      },
    }),
    route({
      method: 'PATCH', url: '/api/v1/orgs/:org/members/:user', access: 'owner', tag: 'members', summary: 'Changes a member\'s role; the last owner stays owner (409).',
      schema: { params: params('org', 'user'), body: input({ role: ROLE }, ['role']), response: { 200: MEMBER } },
      async handler(request) {
        const { org } = scopeOf(request);
        const { user } = request.params;
        changed(await changeMembership(store, org.id, user, request.body.role), `member ${user}`);
        return memberView(found((await store.accounts.listMembers(org.id)).find((m) => m.userId === user), `member ${user}`));
      },
    }),
    route({
      method: 'DELETE', url: '/api/v1/orgs/:org/members/:user', access: 'owner', tag: 'members', summary: 'Removes a member; the last owner cannot be removed (409).',
      schema: { params: params('org', 'user'), response: { 200: obj({ user_id: str(), removed: { type: 'boolean' } }) } },
      async handler(request) {
        const { user } = request.params;
        changed(await changeMembership(store, scopeOf(request).org.id, user, null), `member ${user}`);
        return { user_id: user, removed: true };
      },
    }),
  ];
}

/** The signed-in user's invitations (accept, decline) and an org's pending ones (list, revoke). */
export function invitationRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  // Someone else's invitation, an expired or an ended one: the same 404, so an id says nothing about anyone else.
  const gone = (id: string): GatewayError => new GatewayError('not_found', [`No pending invitation ${id} for you`]);
  return [
    route({
      method: 'GET', url: '/api/v1/invitations', access: 'user', tag: 'invitations', summary: 'The pending invitations addressed to the signed-in user\'s email.',
      schema: { response: { 200: list(INVITATION) } },
      async handler(request) {
        return { data: (await store.accounts.invitationsFor(callerOf(request).user.email)).map(invitationView) };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/invitations/:invitation/accept', access: 'user', tag: 'invitations',
      summary: 'Accepts one of the signed-in user\'s invitations: they become a member with its role. Anyone else\'s, an expired or an ended one is 404.',
      schema: { params: params('invitation'), response: { 200: obj({ invitation: INVITATION, member: MEMBER }) } },
      async handler(request) {
        const { invitation: id } = request.params;
        const accepted = await conflictAs409(() => acceptInvitation(store, id, callerOf(request).user));
        if (!accepted) throw gone(id);
        return { invitation: invitationView(accepted.invitation), member: memberView(accepted.member) };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/invitations/:invitation/decline', access: 'user', tag: 'invitations', summary: 'Declines one of the signed-in user\'s invitations.',
      schema: { params: params('invitation'), response: { 200: INVITATION } },
      async handler(request) {
        const { invitation: id } = request.params;
        const declined = await endInvitation(store, id, 'declined', { email: callerOf(request).user.email });
        if (!declined) throw gone(id);
        return invitationView(declined);
      },
    }),
    orgListRoute({
      url: '/api/v1/orgs/:org/invitations', access: 'owner', tag: 'invitations', summary: 'The org\'s pending invitations.', item: INVITATION,
      list: async (orgId) => (await store.accounts.orgInvitations(orgId)).map(invitationView),
    }),
    route({
      method: 'DELETE', url: '/api/v1/orgs/:org/invitations/:invitation', access: 'owner', tag: 'invitations', summary: 'Revokes one of the org\'s pending invitations.',
      schema: { params: params('org', 'invitation'), response: { 200: INVITATION } },
      async handler(request) {
        const { invitation: id } = request.params;
        return invitationView(found(await endInvitation(store, id, 'revoked', { orgId: scopeOf(request).org.id }), `pending invitation ${id}`));
      },
    }),
  ];
}
