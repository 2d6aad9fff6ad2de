import { GatewayError } from '../errors.js';
import type { LimitSpec } from '../limits/types.js';
import { UNSUPPORTED_PARAMS_POLICIES, type UnsupportedParamsPolicy } from '../providers/types.js';
import { scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import type { ManagementRoute } from './http.js';
import { limitsFromBody, LIMITS_INPUT, readUsage, USAGE, usageView, type LimitsBody } from './limits-api.js';
import { keyScope, projectScope } from '../limits/admission.js';
import { projectOf } from './routes-orgs.js';
import { input, int, maybe, params, str, type JsonSchema } from './schemas.js';
import { API_KEY, keyView, PROJECT, projectView } from './views.js';

/** A view schema with the current `usage` of its limits added. */
const withUsage = (view: JsonSchema): JsonSchema => ({
  ...view, properties: { ...(view.properties as object), usage: USAGE }, required: [...(view.required as string[]), 'usage'],
});
const KEY_DETAIL = withUsage(API_KEY);
const PROJECT_DETAIL = withUsage(PROJECT);
const PATCH_BODY: JsonSchema = {
  ...input({ name: str('The key\'s new label (the key itself is unchanged)', { maxLength: 100 }), limits: LIMITS_INPUT }),
  minProperties: 1,
};
/** The most a project's default_max_tokens may be: above any model's output bound today, and a cap on what one request can hold. */
export const MAX_DEFAULT_MAX_TOKENS = 1_000_000;
const PROJECT_PATCH_BODY: JsonSchema = {
  ...input({
    limits: LIMITS_INPUT,
    default_max_tokens: maybe(int(`Chat output bound for requests that name none, 1–${MAX_DEFAULT_MAX_TOKENS}; null clears it`, { minimum: 1, maximum: MAX_DEFAULT_MAX_TOKENS })),
    unsupported_params: maybe(str('Chat unsupported_params policy of the project\'s keys, over gateway.yaml\'s and the provider files\' (docs/chat.md); null clears it', {
      enum: [...UNSUPPORTED_PARAMS_POLICIES, null],
    })),
  }),
  minProperties: 1,
};

/** One key or project with its limits and what they count now; PATCH changes the limits (absent fields kept, null removes). */
export function limitRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  const keyOf = async (orgId: string, id: string) => {
    const key = await store.tenancy.getKey(orgId, id);
    if (!key) throw new GatewayError('not_found', [`No API key ${id}`]);
    return key;
  };
  const projectSummary = async (orgId: string, id: string) => {
    const project = (await store.tenancy.listProjects(orgId)).find((p) => p.id === id);
    if (!project) throw new GatewayError('not_found', [`No project ${id}`]);
    return project;
  };
  const keyDetail = async (orgId: string, id: string) => {
    const key = await keyOf(orgId, id);
    const usage = await readUsage(d.limiter, keyScope(key));
    return { ...keyView(key, d.now()), usage: usageView(usage) };
  };
  const projectDetail = async (orgId: string, id: string) => {
    const project = await projectSummary(orgId, id);
    const usage = await readUsage(d.limiter, projectScope(project));
    return { ...projectView(project), usage: usageView(usage) };
  };
  const patched = (current: LimitSpec, body: unknown): LimitSpec => limitsFromBody((body as { limits: LimitsBody }).limits, current);
  return [
    {
      method: 'GET', url: '/api/v1/orgs/:org/keys/:key', tag: 'keys',
      summary: 'One API key with its limits and their current counts: requests and tokens in the window, requests in flight, budget spent this period and when it resets.',
      schema: { params: params('org', 'key'), response: { 200: KEY_DETAIL } },
      async handler(request) {
        return keyDetail(scopeOf(request).org.id, (request.params as { key: string }).key);
      },
    },
    {
      method: 'PATCH', url: '/api/v1/orgs/:org/keys/:key', tag: 'keys',
      summary: 'Renames the key and/or changes its limits: fields left out keep their value, null removes a limit. Every instance is told at once (its key cache evicted).',
      schema: { params: params('org', 'key'), body: PATCH_BODY, response: { 200: KEY_DETAIL } },
      async handler(request) {
        const orgId = scopeOf(request).org.id;
        const key = await keyOf(orgId, (request.params as { key: string }).key);
        const body = request.body as { name?: string; limits?: LimitsBody };
        const gone = (): never => { throw new GatewayError('not_found', [`No API key ${key.id}`]); };
        // Both are checked before either is written: a bad limit leaves the name as it was.
        const limits = body.limits === undefined ? undefined : patched(key.limits, body);
        if (limits && !(await store.limits.setKeyLimits(orgId, key.id, limits))) gone();
        if (body.name !== undefined && !(await store.tenancy.renameKey(orgId, key.id, body.name.trim()))) gone();
        await d.invalidation.invalidate('api_key', key.prefix);
        return keyDetail(orgId, key.id);
      },
    },
    {
      method: 'GET', url: '/api/v1/orgs/:org/projects/:project', tag: 'projects',
      summary: 'One project with its limits (shared by all its keys) and their current counts.',
      schema: { params: params('org', 'project'), response: { 200: PROJECT_DETAIL } },
      async handler(request) {
        return projectDetail(scopeOf(request).org.id, (request.params as { project: string }).project);
      },
    },
    {
      method: 'PATCH', url: '/api/v1/orgs/:org/projects/:project', tag: 'projects',
      summary: 'Changes the project\'s limits, its default_max_tokens and its unsupported_params: fields left out keep their value, null removes a limit or a setting.',
      schema: { params: params('org', 'project'), body: PROJECT_PATCH_BODY, response: { 200: PROJECT_DETAIL } },
      async handler(request) {
        const orgId = scopeOf(request).org.id;
        const project = await projectOf(d, request.params as { project: string }, orgId);
        const body = request.body as { limits?: LimitsBody; default_max_tokens?: number | null; unsupported_params?: UnsupportedParamsPolicy | null };
        const gone = (): never => { throw new GatewayError('not_found', [`No project ${project.id}`]); };
        // Everything is checked before anything is written: a bad limit leaves the settings as they were.
        const limits = body.limits === undefined ? undefined : limitsFromBody(body.limits, project.limits);
        if (limits && !(await store.limits.setProjectLimits(orgId, project.id, limits))) gone();
        if (body.default_max_tokens !== undefined && !(await store.tenancy.setProjectDefaultMaxTokens(orgId, project.id, body.default_max_tokens))) gone();
        if (body.unsupported_params !== undefined && !(await store.tenancy.setProjectUnsupportedParams(orgId, project.id, body.unsupported_params))) gone();
        // Evicts every cached key, so the project's keys read its new limits and settings at once on every instance.
        await d.invalidation.invalidate('limits', project.id);
        return projectDetail(orgId, project.id);
      },
    },
  ];
}
