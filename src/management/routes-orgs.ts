import { allowedModels, futureTime, issueKey } from '../tenancy/admin.js';
import { GatewayError, invalidField } from '../lib/errors.js';
import { projectNameProblem } from '../tenancy/project-name.js';
import { DuplicateError } from '../store/types.js';
import { callerOf, scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { found, orgListRoute, route, type ManagementRoute } from './http.js';
import { usdInput } from './usd.js';

export { usdInput };
import { LIMITS_INPUT, limitsFromBody } from './limits-api.js';
import { EMAIL, input, list, maybe, NAME, params, str, time, USD_INPUT } from './schemas.js';
import { keyListView, KEY_LIST_ITEM } from './key-usage.js';
import { API_KEY, CREATED_KEY, keyView, ORG, orgView, PROJECT, projectView } from './views.js';

/** A DuplicateError (unique name or email taken) as the 409 the client sees. */
export async function conflictAs409<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof DuplicateError) throw new GatewayError('already_exists', [err.message]);
    throw err;
  }
}

const KEY_BODY = input({
  name: str('A label for people', { maxLength: 100 }),
  expires_at: maybe(time('After this the key is refused (401 api_key_expired); null: never')),
  allowed_models: maybe({ type: 'array', items: str('', { minLength: 1, maxLength: 200 }), minItems: 1, maxItems: 100, description: 'Model ids the key may call; null or absent: all' }),
  limits: LIMITS_INPUT,
});

/** Organizations, projects and API keys. */
export function orgRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  return [
    route({
      method: 'GET', url: '/api/v1/orgs', access: 'user', tag: 'orgs', summary: 'Organizations: every one for an operator, else those the caller belongs to.',
      schema: { response: { 200: list(ORG) } },
      async handler(request) {
        const { user } = callerOf(request);
        const rows = await store.tenancy.listOrgs(user.operator ? null : user.id);
        return { data: rows.map((r) => orgView(r.org, user.operator ? 'operator' : r.role ?? 'member')) };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/orgs', access: 'operator', tag: 'orgs', summary: 'Creates an organization (with its `default` project), optionally with starting credits and an owner.',
      schema: {
        body: input({
          name: NAME, credits_usd: USD_INPUT, retention: str('', { enum: ['standard', 'none'], default: 'standard' }),
          owner_email: { ...EMAIL, description: 'An existing user to make its owner' },
        }, ['name']),
        response: { 201: ORG },
      },
      async handler(request, reply) {
        const b = request.body;
        const credits = b.credits_usd === undefined ? 0 : usdInput(b.credits_usd, 'credits_usd');
        if (credits < 0) throw invalidField('credits_usd', '"credits_usd" must not be negative');
        const owner = b.owner_email === undefined ? undefined : await store.accounts.findUserByEmail(b.owner_email);
        if (b.owner_email !== undefined && !owner) throw invalidField('owner_email', `"owner_email": no user with email ${b.owner_email}`);
        const org = await conflictAs409(() => store.createOrg(b.name.trim(), credits, b.retention));
        if (owner) await store.accounts.addMember(org.id, owner.id, 'owner');
        void reply.code(201);
        return orgView(org, 'operator');
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org', access: 'member', tag: 'orgs', summary: 'One organization: balance, retention and the caller\'s role.',
      schema: { params: params('org'), response: { 200: ORG } },
      async handler(request) {
        const { org, role } = scopeOf(request);
        return orgView(org, role);
      },
    }),
    orgListRoute({
      url: '/api/v1/orgs/:org/projects', access: 'member', tag: 'projects', summary: 'The org\'s projects (workspaces), oldest first, with their live key counts.', item: PROJECT,
      list: async (orgId) => (await store.tenancy.listProjects(orgId)).map(projectView),
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/projects', access: 'admin', tag: 'projects', summary: 'Creates a project, optionally with limits shared by its keys; names are unique in the org (409).',
      schema: { params: params('org'), body: input({ name: NAME, limits: LIMITS_INPUT }, ['name']), response: { 201: PROJECT } },
      async handler(request, reply) {
        const b = request.body;
        const problem = projectNameProblem(b.name.trim());
        if (problem) throw invalidField('name', problem);
        const limits = limitsFromBody(b.limits);
        const p = await conflictAs409(() => store.tenancy.createProject(scopeOf(request).org.id, b.name.trim(), limits));
        void reply.code(201);
        return projectView({ ...p, liveKeys: 0 });
      },
    }),
    orgListRoute({
      url: '/api/v1/orgs/:org/keys', access: 'member', tag: 'keys', item: KEY_LIST_ITEM,
      summary: 'Every API key of the org, newest first (never the keys themselves); active keys with limits carry their current `usage`.',
      list: async (orgId) => keyListView(d.limiter, await store.tenancy.listKeys(orgId), d.now()),
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/projects/:project/keys', access: 'member', tag: 'keys',
      summary: 'The API keys of one project, newest first; active keys with limits carry their current `usage`.',
      schema: { params: params('org', 'project'), response: { 200: list(KEY_LIST_ITEM) } },
      async handler(request) {
        const project = await projectOf(d, request.params, scopeOf(request).org.id);
        return { data: await keyListView(d.limiter, await store.tenancy.listKeys(project.orgId, project.id), d.now()) };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/projects/:project/keys', access: 'admin', tag: 'keys',
      summary: 'Creates an API key in the project; the key is in this response only. Optional expiry, model allow-list and limits.',
      schema: { params: params('org', 'project'), body: KEY_BODY, response: { 201: CREATED_KEY } },
      async handler(request, reply) {
        const project = await projectOf(d, request.params, scopeOf(request).org.id);
        const b = request.body ?? {};
        const limits = limitsFromBody(b.limits);
        const issued = await issueKey(store, project, {
          name: b.name?.trim() ?? '', expiresAt: futureTime(b.expires_at, d.now(), 'expires_at'), allowedModels: allowedModels(d.catalog, b.allowed_models),
          createdBy: callerOf(request).user.id, limits,
        });
        if (!issued) throw new GatewayError('not_found', [`No project ${project.id}`]);
        const { key, record } = issued;
        void reply.code(201);
        return { ...keyView({ ...record, projectName: project.name }, d.now()), key };
      },
    }),
    route({
      method: 'DELETE', url: '/api/v1/orgs/:org/keys/:key', access: 'admin', tag: 'keys', summary: 'Revokes an API key: refused by every instance once this answers (pushed to their caches).',
      schema: { params: params('org', 'key'), response: { 200: API_KEY } },
      async handler(request) {
        const id = request.params.key;
        const revoked = found(await store.tenancy.revokeKey(scopeOf(request).org.id, id), `API key ${id}`);
        await d.invalidation.invalidate('api_key', revoked.prefix);
        return keyView(revoked, d.now());
      },
    }),
  ];
}

async function projectOf(d: ManagementDeps, p: { project: string }, orgId: string) {
  return found(await d.store.tenancy.getProject(orgId, p.project), `project ${p.project}`);
}
