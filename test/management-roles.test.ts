import { beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import type { ManagementDeps } from '../src/management/deps.js';
import { managementRoutes } from '../src/management/index.js';
import { isOrgAccess, type Access } from '../src/management/roles.js';
import { chat } from './cli-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow } from './harness.js';
import { addUser, Api, code, rows, signIn } from './management-helpers.js';

/** Every core route and the access it declares (routes are built for their declarations only: no request reaches these). */
const ROUTE_ACCESS: Record<string, Access> = {
  'GET /api/openapi.json': 'public',
  ...Object.fromEntries(managementRoutes({} as ManagementDeps, undefined).map((r) => [`${r.method} ${r.url}`, r.access])),
};

/**
 * The roles matrix: every route, as its declaration says, called by every kind of caller.
 * Anonymous → 401; a caller with no role in the org → 404 (never 403: another org's
 * resources are not confirmed); a role too low → 403; enough → 2xx.
 */
let clock = Date.UTC(2026, 10, 2, 12);
const t = useOrgGateway('acme', '20', { now: () => clock });

type Caller = 'anonymous' | 'outsider' | 'member' | 'admin' | 'owner' | 'operator';
const CALLERS: Caller[] = ['anonymous', 'outsider', 'member', 'admin', 'owner', 'operator'];
const clients = {} as Record<Caller, Api>;
const emails: Record<Exclude<Caller, 'anonymous'>, string> = {
  outsider: 'outsider@globex.test', member: 'member@acme.test', admin: 'admin@acme.test', owner: 'owner@acme.test', operator: 'op@tollgate.test',
};
let other: { orgId: string; projectId: string; keyId: string; key: string; requestId: string };
let n = 0;
const unique = (): string => `${Date.now().toString(36)}-${n++}`;

beforeAll(async () => {
  const b = await t.org('globex', '5');
  await addUser(t, 'outsider@globex.test', { org: 'globex', role: 'owner' });
  for (const role of ['member', 'admin', 'owner'] as const) await addUser(t, `${role}@acme.test`, { org: 'acme', role });
  await addUser(t, 'op@tollgate.test', { operator: true });
  clients.anonymous = new Api(t.url, { origin: t.url });
  clients.outsider = await signIn(t.url, 'outsider@globex.test');
  for (const role of ['member', 'admin', 'owner'] as const) clients[role] = await signIn(t.url, `${role}@acme.test`);
  clients.operator = await signIn(t.url, 'op@tollgate.test');
  const r = await chat(t.url, b.key);
  const keyRecord = await t.gateway.store.findApiKey(b.key.slice(0, 11));
  other = { orgId: b.org.id, projectId: keyRecord!.projectId, keyId: keyRecord!.id, key: b.key, requestId: r.requestId ?? '' };
  await logRow(t, other.requestId);
});

/** A fresh, valid request for each route of the table (fresh names, a key of its own to revoke, …). */
async function requestFor(route: string, caller: Caller): Promise<{ method: string; path: string; body?: unknown }> {
  const [method, pattern] = route.split(' ') as [string, string];
  const org = t.orgId;
  const project = (await t.gateway.store.tenancy.findProject(org, 'default'))!.id;
  const params: Record<string, () => Promise<string> | string> = {
    org: () => org, project: () => project, provider: () => 'openai', id: async () => (await logRow(t, (await chat(t.url, t.key)).requestId ?? '')).requestId,
    key: async () => (await createKey(t.gateway.store, 'acme', { name: unique() })).record.id,
    // An org's own invitation for its routes; for the invitee's, one addressed to the caller, to an org of its own (accepting must not make an outsider a member of acme).
    invitation: async () => {
      const accounts = t.gateway.store.accounts;
      if (pattern.startsWith('/api/v1/orgs/')) return (await accounts.createInvitation(org, `i-${unique()}@acme.test`, 'member', null, clock + 86_400_000)).id;
      const other = (await t.gateway.store.findOrgByName('invitations-matrix')) ?? (await t.gateway.store.createOrg('invitations-matrix', 0, 'standard'));
      return (await accounts.createInvitation(other.id, caller === 'anonymous' ? 'nobody@acme.test' : emails[caller], 'member', null, clock + 86_400_000)).id;
    },
    user: async () => addUser(t, `m-${unique()}@acme.test`, { org: 'acme', role: 'member' }),
    // Stored only: this file starts no delivery task, so nothing is ever sent to it.
    webhook: async () => (await t.gateway.store.webhooks.create(org, { url: 'https://93.184.216.34/hook', events: ['budget.threshold'], slack: false, secret: 'whsec_matrix' }, null)).id,
    // The caller's own token (another user's would be a 404 for anyone).
    token: async () => {
      const user = caller === 'anonymous' ? undefined : await t.gateway.store.accounts.findUserByEmail(emails[caller]);
      return user ? (await t.gateway.store.accounts.createToken(user.id, 'to revoke', `tgm_${unique().slice(-8).padStart(8, 'x')}`, 'f'.repeat(64))).id : 'tok_none';
    },
  };
  let path = pattern;
  for (const m of pattern.matchAll(/:([a-z]+)/g)) path = path.replace(`:${m[1]}`, await params[m[1]!]!());
  const bodies: Record<string, unknown> = {
    'POST /api/v1/session': { email: 'member@acme.test', password: 'correct horse battery staple' },
    'POST /api/v1/tokens': { name: 'matrix' },
    'POST /api/v1/orgs': { name: `org-${unique()}` },
    'POST /api/v1/orgs/:org/projects': { name: `p-${unique()}` },
    'POST /api/v1/orgs/:org/projects/:project/keys': { name: 'matrix' },
    'POST /api/v1/orgs/:org/credits': { amount_usd: 0.25, note: 'matrix' },
    'PUT /api/v1/orgs/:org/provider-keys/:provider': { key: 'sk-matrix-0000000000000000' },
    // Without a password: an owner invites (202), an operator adds an existing user or invites an unknown email.
    'POST /api/v1/orgs/:org/members': { email: `new-${unique()}@acme.test`, role: 'member' },
    'PATCH /api/v1/orgs/:org/members/:user': { role: 'admin' },
    'PATCH /api/v1/orgs/:org/keys/:key': { limits: { rpm: 1000 } },
    'PATCH /api/v1/orgs/:org/projects/:project': { limits: { rpm: 1000 } },
    // The same password again (it stays valid for the rest of the file); activating an active user changes nothing.
    'PUT /api/v1/me/password': { current_password: 'correct horse battery staple', new_password: 'correct horse battery staple' },
    'PATCH /api/v1/users/:user': { active: true },
    'POST /api/v1/orgs/:org/keys/:key/rotate': { grace_seconds: 60 },
    'POST /api/v1/orgs/:org/webhooks': { url: 'https://93.184.216.34/hook' },
    'PUT /api/v1/orgs/:org/balance-alert': { below_usd: '1' },
  };
  if (route === 'DELETE /api/v1/orgs/:org/provider-keys/:provider') await t.gateway.store.providerKeys.set(org, 'openai', 'sk-to-delete-000000000000');
  return { method, path, body: bodies[route] };
}

/** What a caller gets from a route with this access. */
function expected(access: Access, caller: Caller, route: string): number | 'ok' {
  if (access === 'public') return 'ok';
  if (caller === 'anonymous') return 401;
  if (caller === 'operator') return 'ok';
  const orgScoped = route.includes(':org');
  if (caller === 'outsider') return orgScoped ? 404 : access === 'operator' ? 403 : 'ok';
  if (access === 'operator') return 403;
  if (!isOrgAccess(access)) return 'ok';
  const rank = { member: 1, admin: 2, owner: 3 };
  return rank[caller] >= rank[access] ? 'ok' : 403;
}

describe('the roles matrix', () => {
  const routes = Object.entries(ROUTE_ACCESS);

  it.each(routes)('%s (needs %s)', async (route, access) => {
    for (const caller of CALLERS) {
      const req = await requestFor(route, caller);
      // Signing out ends the session: that route gets a session of its own.
      const api = route === 'DELETE /api/v1/session' && caller !== 'anonymous' ? await signIn(t.url, emails[caller]) : clients[caller];
      const r = await api.call(req.method, req.path, req.body);
      const want = expected(access, caller, route);
      const label = `${caller} → ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
      // This gateway has no console.oidc: the SSO routes let everyone through, then say SSO is off (test/sso.test.ts runs them configured).
      if (want === 'ok' && route.includes('/oidc/') && code(r) === 'sso_not_configured') continue;
      if (want === 'ok') expect(r.status, label).toBeGreaterThanOrEqual(200);
      if (want === 'ok') expect(r.status, label).toBeLessThan(300);
      else {
        expect(r.status, label).toBe(want);
        expect(code(r), label).toBe({ 401: 'authentication_required', 403: 'permission_denied', 404: 'not_found' }[want]);
      }
    }
  });

  it('covers every route the server has under /api (the declarations are the whole surface)', async () => {
    const doc = (await clients.anonymous.get('/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const served = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`));
    const plugin = served.filter((r) => r.includes('/music') || r.endsWith('/models') || r.endsWith('/budget-check'));
    expect(plugin.sort()).toEqual(['GET /api/v1/orgs/:org/budget-check', 'GET /api/v1/orgs/:org/models', 'GET /api/v1/orgs/:org/music', 'GET /api/v1/orgs/:org/music/:id/content']);
    expect(served.filter((r) => !plugin.includes(r)).sort()).toEqual(Object.keys(ROUTE_ACCESS).filter((r) => r !== 'GET /api/openapi.json').sort());
    // What the document tells clients each route needs is what the route declares.
    const needs = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([m, op]) => [`${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, (op as { description?: string }).description]));
    for (const [route, description] of needs) if (!plugin.includes(route!)) expect(description, route).toBe(`Needs: ${ROUTE_ACCESS[route!]}.`);
    expect((await clients.anonymous.get('/api/openapi.json')).status).toBe(200);
  });
});

describe("another org's resources are 404, never 403, and stay untouched", () => {
  it('through the path of an org the caller belongs to', async () => {
    const owner = clients.owner;
    const acme = t.orgId;
    for (const [method, path] of [
      ['GET', `/api/v1/orgs/${acme}/projects/${other.projectId}/keys`],
      ['POST', `/api/v1/orgs/${acme}/projects/${other.projectId}/keys`],
      ['DELETE', `/api/v1/orgs/${acme}/keys/${other.keyId}`],
      ['GET', `/api/v1/orgs/${acme}/logs/${other.requestId}`],
    ] as const) {
      const r = await owner.call(method, path, method === 'POST' ? { name: 'sneaky' } : undefined);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(code(r)).toBe('not_found');
    }
    const filtered = await owner.get(`/api/v1/orgs/${acme}/logs?project=${other.projectId}`);
    expect(rows(filtered)).toEqual([]);
    clock += 1001;
    expect((await chat(t.url, other.key)).status).toBe(200); // the other org's key still works
  });

  it('the same answer for an org that does not exist', async () => {
    const a = await clients.owner.get(`/api/v1/orgs/${other.orgId}/projects`);
    const b = await clients.owner.get('/api/v1/orgs/org_doesnotexist0000000000/projects');
    expect([a.status, b.status]).toEqual([404, 404]);
    expect(a.body.error).toMatchObject({ code: 'not_found' });
    expect(Object.keys(a.body)).toEqual(Object.keys(b.body));
  });
});
