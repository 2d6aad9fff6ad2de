import { GatewayError, invalidField } from '../errors.js';
import { microsToUsd } from '../money.js';
import { SecretKeyMissingError } from '../secrets.js';
import type { OrgRole } from '../store/accounts.js';
import { CreditRefusedError } from '../store/types.js';
import { callerOf, scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import type { ManagementRoute } from './http.js';
import { passwordProblem, hashPassword } from './passwords.js';
import { conflictAs409, usdInput } from './routes-orgs.js';
import { EMAIL, input, list, maybe, obj, PAGE_LIMIT, params, ROLE, str, usd, USD_INPUT } from './schemas.js';
import { CREDIT, creditView, MEMBER, memberView, PROVIDER_KEY, providerKeyView } from './views.js';

const CREDITS = obj({ balance_usd: usd('Balance now'), data: { type: 'array', items: CREDIT }, next_cursor: maybe(str('Pass as `cursor` for older entries')) });

/** Credits, provider keys (bring your own key) and members of an org. */
export function orgAdminRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  return [
    {
      method: 'GET', url: '/api/v1/orgs/:org/credits', tag: 'credits', summary: 'The balance and the credit history (top-ups and corrections, who and when), newest first.',
      schema: {
        params: params('org'), querystring: input({ limit: PAGE_LIMIT(200, 50), cursor: str('From the previous page', { pattern: '^[0-9]{1,15}$' }) }),
        response: { 200: CREDITS },
      },
      async handler(request) {
        const { org } = scopeOf(request);
        const q = request.query as { limit: number; cursor?: string };
        const rows = await store.tenancy.listCredits(org.id, q.limit + 1, q.cursor === undefined ? undefined : Number(q.cursor));
        const page = rows.slice(0, q.limit);
        const current = await store.getOrg(org.id);
        return {
          balance_usd: microsToUsd(current?.balanceMicros ?? org.balanceMicros), data: page.map(creditView),
          next_cursor: rows.length > q.limit ? String(page[page.length - 1]?.id) : null,
        };
      },
    },
    {
      method: 'POST', url: '/api/v1/orgs/:org/credits', tag: 'credits', summary: 'Adds credits (a negative amount removes them, never below zero). Operators only.',
      schema: { params: params('org'), body: input({ amount_usd: USD_INPUT, note: str('', { maxLength: 500 }) }, ['amount_usd']), response: { 201: CREDITS } },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const b = request.body as { amount_usd: number | string; note?: string };
        const amount = usdInput(b.amount_usd, 'amount_usd');
        if (amount === 0) throw invalidField('amount_usd', '"amount_usd" must not be zero');
        let balance: number;
        try {
          balance = await store.addCredits(org.id, amount, b.note ?? 'credits added in the console', callerOf(request).user.id);
        } catch (err) {
          if (err instanceof CreditRefusedError) throw invalidField('amount_usd', `"amount_usd": ${err.message}`);
          throw err;
        }
        void reply.code(201);
        return { balance_usd: microsToUsd(balance), data: (await store.tenancy.listCredits(org.id, 1)).map(creditView), next_cursor: null };
      },
    },
    {
      method: 'GET', url: '/api/v1/orgs/:org/provider-keys', tag: 'provider-keys',
      summary: "The org's own provider keys (bring your own key), masked; and the providers a key can be set for.",
      schema: { params: params('org'), response: { 200: list(PROVIDER_KEY, { providers: { type: 'array', items: str(), description: 'Provider ids of this gateway' } }) } },
      async handler(request) {
        return { data: (await store.providerKeys.list(scopeOf(request).org.id)).map(providerKeyView), providers: [...d.catalog.providers.keys()].sort() };
      },
    },
    {
      method: 'PUT', url: '/api/v1/orgs/:org/provider-keys/:provider', tag: 'provider-keys',
      summary: 'Sets the org\'s own key for a provider (encrypted at rest); requests it serves are not debited.',
      schema: { params: params('org', 'provider'), body: input({ key: str('The provider API key', { minLength: 1, maxLength: 4096, pattern: '^\\S+$' }) }, ['key']), response: { 200: PROVIDER_KEY } },
      async handler(request) {
        const { provider } = request.params as { provider: string };
        if (!d.catalog.providers.has(provider)) throw invalidField('provider', `"provider": no provider "${provider}" (known: ${[...d.catalog.providers.keys()].sort().join(', ')})`);
        try {
          const orgId = scopeOf(request).org.id;
          const info = await store.providerKeys.set(orgId, provider, (request.body as { key: string }).key, callerOf(request).user.id);
          await d.invalidation.invalidate('provider_key', orgId);
          return providerKeyView(info);
        } catch (err) {
          if (err instanceof SecretKeyMissingError) throw new GatewayError('encryption_unavailable', [err.message]);
          throw err;
        }
      },
    },
    {
      method: 'DELETE', url: '/api/v1/orgs/:org/provider-keys/:provider', tag: 'provider-keys', summary: 'Removes the org\'s own key for a provider.',
      schema: { params: params('org', 'provider'), response: { 200: obj({ provider: str(), deleted: { type: 'boolean' } }) } },
      async handler(request) {
        const { provider } = request.params as { provider: string };
        const orgId = scopeOf(request).org.id;
        if (!(await store.providerKeys.delete(orgId, provider))) throw new GatewayError('not_found', [`No key of this organization for provider ${provider}`]);
        await d.invalidation.invalidate('provider_key', orgId);
        return { provider, deleted: true };
      },
    },
    ...memberRoutes(d),
  ];
}

function memberRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  const newUser = async (email: string, password: string | undefined) => {
    if (password === undefined) throw new GatewayError('not_found', [`No user with email ${email}: give a password to create one`], { param: 'email' });
    const problem = passwordProblem(password);
    if (problem) throw invalidField('password', `"password": ${problem}`);
    return conflictAs409(async () => store.accounts.createUser(email, await hashPassword(password), false));
  };
  const changed = (result: 'ok' | 'not_found' | 'last_owner', userId: string): void => {
    if (result === 'not_found') throw new GatewayError('not_found', [`No member ${userId}`]);
    if (result === 'last_owner') throw new GatewayError('last_owner');
  };
  return [
    {
      method: 'GET', url: '/api/v1/orgs/:org/members', tag: 'members', summary: 'The org\'s members and their roles.',
      schema: { params: params('org'), response: { 200: list(MEMBER) } },
      async handler(request) {
        return { data: (await store.accounts.listMembers(scopeOf(request).org.id)).map(memberView) };
      },
    },
    {
      method: 'POST', url: '/api/v1/orgs/:org/members', tag: 'members',
      summary: 'Adds a user by email with a role; with `password`, a user who does not exist yet is created.',
      schema: {
        params: params('org'),
        body: input({ email: EMAIL, role: ROLE, password: str('For a new user only: their first password (10+ characters)', { maxLength: 1024 }) }, ['email', 'role']),
        response: { 201: MEMBER },
      },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const b = request.body as { email: string; role: OrgRole; password?: string };
        const userId = (await store.accounts.findUserByEmail(b.email))?.id ?? (await newUser(b.email, b.password)).id;
        const member = await conflictAs409(() => store.accounts.addMember(org.id, userId, b.role));
        void reply.code(201);
        return memberView(member);
      },
    },
    {
      method: 'PATCH', url: '/api/v1/orgs/:org/members/:user', tag: 'members', summary: 'Changes a member\'s role; the last owner stays owner (409).',
      schema: { params: params('org', 'user'), body: input({ role: ROLE }, ['role']), response: { 200: MEMBER } },
      async handler(request) {
        const { org } = scopeOf(request);
        const { user } = request.params as { user: string };
        changed(await store.accounts.changeRole(org.id, user, (request.body as { role: OrgRole }).role), user);
        const member = (await store.accounts.listMembers(org.id)).find((m) => m.userId === user);
        if (!member) throw new GatewayError('not_found', [`No member ${user}`]);
        return memberView(member);
      },
    },
    {
      method: 'DELETE', url: '/api/v1/orgs/:org/members/:user', tag: 'members', summary: 'Removes a member; the last owner cannot be removed (409).',
      schema: { params: params('org', 'user'), response: { 200: obj({ user_id: str(), removed: { type: 'boolean' } }) } },
      async handler(request) {
        const { user } = request.params as { user: string };
        changed(await store.accounts.removeMember(scopeOf(request).org.id, user), user);
        return { user_id: user, removed: true };
      },
    },
  ];
}
