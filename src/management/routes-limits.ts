import { CACHE_SETTING_SCHEMA } from '../model/cache-settings.js';
import type { CacheSetting } from '../model/cache.js';
import { changeKey, changeProject, MAX_DEFAULT_MAX_TOKENS } from '../tenancy/admin.js';
import { GatewayError } from '../lib/errors.js';
import type { LimitSpec } from '../model/limits.js';
import { UNSUPPORTED_PARAMS_POLICIES, type UnsupportedParamsPolicy } from '../providers/types.js';
import { BODY_LOGGING_INPUT, checkGuardrails, GUARDRAILS_INPUT } from '../guardrails/schema.js';
import { DEFAULT_BODY_LOGGING, type BodyLogging, type GuardrailSpec } from '../model/guardrails.js';
import { scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import type { ManagementRoute } from './http.js';
import { limitsFromBody, LIMITS_INPUT, readUsage, USAGE, usageView, type LimitsBody } from './limits-api.js';
import { keyScope, projectScope } from '../pipeline/admission.js';
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
  ...input({ name: str('The key\'s new label (the key itself is unchanged)', { maxLength: 100 }), limits: LIMITS_INPUT, cache: CACHE_SETTING_SCHEMA as unknown as JsonSchema }),
  minProperties: 1,
};
const PROJECT_PATCH_BODY: JsonSchema = {
  ...input({
    limits: LIMITS_INPUT,
    default_max_tokens: maybe(int(`Chat output bound for requests that name none, 1–${MAX_DEFAULT_MAX_TOKENS}; null clears it`, { minimum: 1, maximum: MAX_DEFAULT_MAX_TOKENS })),
    unsupported_params: maybe(str('Chat unsupported_params policy of the project\'s keys, over gateway.yaml\'s and the provider files\' (docs/chat.md); null clears it', {
      enum: [...UNSUPPORTED_PARAMS_POLICIES, null],
    })),
    cache: CACHE_SETTING_SCHEMA as unknown as JsonSchema,
    guardrails: GUARDRAILS_INPUT,
    body_logging: BODY_LOGGING_INPUT,
  }),
  minProperties: 1,
};

/** GET /api/v1/orgs/:org/<kind>s/:<kind>: one key or project with the current counts of its limits. */
function detailRoute(kind: 'key' | 'project', response: JsonSchema, detail: (orgId: string, id: string) => Promise<unknown>, summary: string): ManagementRoute {
  return {
    method: 'GET', url: `/api/v1/orgs/:org/${kind}s/:${kind}`, tag: `${kind}s`, summary,
    schema: { params: params('org', kind), response: { 200: response } },
    async handler(request) {
      return detail(scopeOf(request).org.id, (request.params as Record<string, string>)[kind]!);
    },
  };
}

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
    detailRoute('key', KEY_DETAIL, keyDetail,
      'One API key with its limits and their current counts: requests and tokens in the window, requests in flight, budget spent this period and when it resets.'),
    {
      method: 'PATCH', url: '/api/v1/orgs/:org/keys/:key', tag: 'keys',
      summary: 'Renames the key and/or changes its limits and its response-cache setting (docs/cache.md): fields left out keep their value, null removes a limit or the setting. Every instance is told at once (its key cache evicted).',
      schema: { params: params('org', 'key'), body: PATCH_BODY, response: { 200: KEY_DETAIL } },
      async handler(request) {
        const orgId = scopeOf(request).org.id;
        const key = await keyOf(orgId, (request.params as { key: string }).key);
        const body = request.body as { name?: string; limits?: LimitsBody; cache?: CacheSetting | null };
        // Everything is checked before anything is written: a bad limit leaves the name as it was.
        const limits = body.limits === undefined ? undefined : patched(key.limits, body);
        const change = { ...(limits ? { limits } : {}), cache: body.cache, name: body.name?.trim() };
        if (!(await changeKey(store, d.invalidation, key, change))) throw new GatewayError('not_found', [`No API key ${key.id}`]);
        return keyDetail(orgId, key.id);
      },
    },
    detailRoute('project', PROJECT_DETAIL, projectDetail, 'One project with its limits (shared by all its keys) and their current counts.'),
    {
      method: 'PATCH', url: '/api/v1/orgs/:org/projects/:project', tag: 'projects',
      summary: 'Changes the project\'s limits, default_max_tokens, unsupported_params, response-cache setting (docs/cache.md), guardrails and body_logging (docs/guardrails.md): fields left out keep their value, null removes a limit or a setting.',
      schema: { params: params('org', 'project'), body: PROJECT_PATCH_BODY, response: { 200: PROJECT_DETAIL } },
      async handler(request) {
        const orgId = scopeOf(request).org.id;
        const project = await projectOf(d, request.params as { project: string }, orgId);
        const body = request.body as {
          limits?: LimitsBody; default_max_tokens?: number | null; unsupported_params?: UnsupportedParamsPolicy | null; cache?: CacheSetting | null;
          guardrails?: GuardrailSpec[]; body_logging?: Partial<BodyLogging> | null;
        };
        // Everything is checked before anything is written: a bad limit leaves the settings as they were.
        const limits = body.limits === undefined ? undefined : limitsFromBody(body.limits, project.limits);
        if (body.guardrails) await checkGuardrails(body.guardrails, d.allowPrivateWebhookUrls);
        const bodyLogging = body.body_logging === undefined ? undefined : body.body_logging && { ...DEFAULT_BODY_LOGGING, ...body.body_logging };
        const changed = await changeProject(store, d.invalidation, project, {
          ...(limits ? { limits } : {}), defaultMaxTokens: body.default_max_tokens, unsupportedParams: body.unsupported_params, cache: body.cache,
          guardrails: body.guardrails, bodyLogging,
        });
        if (!changed) throw new GatewayError('not_found', [`No project ${project.id}`]);
        return projectDetail(orgId, project.id);
      },
    },
  ];
}
