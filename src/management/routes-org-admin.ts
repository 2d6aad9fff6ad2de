import { creditOrg, putProviderKey, removeProviderKey } from '../tenancy/admin.js';
import { GatewayError, invalidField } from '../lib/errors.js';
import { microsToUsd } from '../lib/money.js';
import { SecretKeyMissingError } from '../lib/secrets.js';
import { CreditRefusedError } from '../store/types.js';
import { callerOf, scopeOf } from './authn.js';
import { invitationRoutes, memberRoutes } from './routes-members.js';
import type { ManagementDeps } from './deps.js';
import { found, route, type ManagementRoute } from './http.js';
import { usdInput } from './routes-orgs.js';
import { input, list, maybe, obj, PAGE_LIMIT, params, str, usd, USD_INPUT } from './schemas.js';
import { CREDIT, creditView, PROVIDER_KEY, providerKeyView } from './views.js';

const CREDITS = obj({ balance_usd: usd('Balance now'), data: { type: 'array', items: CREDIT }, next_cursor: maybe(str('Pass as `cursor` for older entries')) });

/** Credits, provider keys (bring your own key), members and invitations of an org. */
export function orgAdminRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  return [
    route({
      method: 'GET', url: '/api/v1/orgs/:org/credits', access: 'member', tag: 'credits', summary: 'The balance and the credit history (top-ups and corrections, who and when), newest first.',
      schema: {
        params: params('org'), querystring: input({ limit: PAGE_LIMIT(200, 50), cursor: str('From the previous page', { pattern: '^[0-9]{1,15}$' }) }),
        response: { 200: CREDITS },
      },
      async handler(request) {
        const { org } = scopeOf(request);
        const q = request.query;
        const rows = await store.tenancy.listCredits(org.id, q.limit + 1, q.cursor === undefined ? undefined : Number(q.cursor));
        const page = rows.slice(0, q.limit);
        const current = await store.getOrg(org.id);
        return {
          balance_usd: microsToUsd(current?.balanceMicros ?? org.balanceMicros), data: page.map(creditView),
          next_cursor: rows.length > q.limit ? String(page[page.length - 1]?.id) : null,
        };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/credits', access: 'operator', tag: 'credits', summary: 'Adds credits (a negative amount removes them, never below zero). Operators only.',
      schema: { params: params('org'), body: input({ amount_usd: USD_INPUT, note: str('', { maxLength: 500 }) }, ['amount_usd']), response: { 201: CREDITS } },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const b = request.body;
        const amount = usdInput(b.amount_usd, 'amount_usd');
        if (amount === 0) throw invalidField('amount_usd', '"amount_usd" must not be zero');
        let balance: number;
        try {
          balance = await creditOrg(store, org.id, amount, b.note ?? 'credits added in the console', callerOf(request).user.id);
        } catch (err) {
          if (err instanceof CreditRefusedError) throw invalidField('amount_usd', `"amount_usd": ${err.message}`);
          throw err;
        }
        void reply.code(201);
        return { balance_usd: microsToUsd(balance), data: (await store.tenancy.listCredits(org.id, 1)).map(creditView), next_cursor: null };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/provider-keys', access: 'admin', tag: 'provider-keys',
      summary: "The org's own provider keys (bring your own key), masked; and the providers a key can be set for.",
      schema: { params: params('org'), response: { 200: list(PROVIDER_KEY, { providers: { type: 'array', items: str(), description: 'Provider ids of this gateway' } }) } },
      async handler(request) {
        return { data: (await store.providerKeys.list(scopeOf(request).org.id)).map(providerKeyView), providers: [...d.catalog.providers.keys()].sort() };
      },
    }),
    route({
      method: 'PUT', url: '/api/v1/orgs/:org/provider-keys/:provider', access: 'admin', tag: 'provider-keys',
      summary: 'Sets the org\'s own key for a provider (encrypted at rest); requests it serves are not debited.',
      schema: { params: params('org', 'provider'), body: input({ key: str('The provider API key', { minLength: 1, maxLength: 4096, pattern: '^\\S+$' }) }, ['key']), response: { 200: PROVIDER_KEY } },
      async handler(request) {
        const { provider } = request.params;
        if (!d.catalog.providers.has(provider)) throw invalidField('provider', `"provider": no provider "${provider}" (known: ${[...d.catalog.providers.keys()].sort().join(', ')})`);
        try {
          const orgId = scopeOf(request).org.id;
          return providerKeyView(await putProviderKey(store, d.invalidation, orgId, provider, request.body.key, callerOf(request).user.id));
        } catch (err) {
          if (err instanceof SecretKeyMissingError) throw new GatewayError('encryption_unavailable', [err.message]);
          throw err;
        }
      },
    }),
    route({
      method: 'DELETE', url: '/api/v1/orgs/:org/provider-keys/:provider', access: 'admin', tag: 'provider-keys', summary: 'Removes the org\'s own key for a provider.',
      schema: { params: params('org', 'provider'), response: { 200: obj({ provider: str(), deleted: { type: 'boolean' } }) } },
      async handler(request) {
        const { provider } = request.params;
        const orgId = scopeOf(request).org.id;
        found(await removeProviderKey(store, d.invalidation, orgId, provider), `key of this organization for provider ${provider}`);
        return { provider, deleted: true };
      },
    }),
    ...memberRoutes(d),
    ...invitationRoutes(d),
  ];
}
