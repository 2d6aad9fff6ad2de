import { changeKey, changeProject, MAX_DEFAULT_MAX_TOKENS } from '../tenancy/admin.js';
import type { LimitScope, LimitSpec } from '../model/limits.js';
import type { KeyListItem, ProjectSummary } from '../store/tenancy.js';
import { UNSUPPORTED_PARAMS_POLICIES } from '../providers/types.js';
import { BODY_LOGGING_INPUT, checkGuardrails, GUARDRAILS_INPUT } from '../guardrails/schema.js';
import { DEFAULT_BODY_LOGGING } from '../model/guardrails.js';
import type { FastifyRequest } from 'fastify';
import { scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { found, route, type ManagementRoute } from './http.js';
import type { LimitsInput } from './api-types.js';
import { limitsFromBody, LIMITS_INPUT, readUsage, USAGE, usageView } from './limits-api.js';
import { keyScope, projectScope } from '../pipeline/admission.js';
import { input, int, maybe, params, str, type JsonSchema } from './schemas.js';
import { API_KEY, CACHE_SETTING, keyView, PROJECT, projectView } from './views.js';

/** A view schema with the current `usage` of its limits added. */
const withUsage = (view: JsonSchema, title: string): JsonSchema => ({
  ...view, title, properties: { ...(view.properties as object), usage: USAGE }, required: [...(view.required as string[]), 'usage'],
});
const KEY_DETAIL = withUsage(API_KEY, 'KeyDetail');
const PROJECT_DETAIL = withUsage(PROJECT, 'ProjectDetail');
const PATCH_BODY: JsonSchema = {
  ...input({ name: str('The key\'s new label (the key itself is unchanged)', { maxLength: 100 }), limits: LIMITS_INPUT, cache: CACHE_SETTING }),
  minProperties: 1,
};
const PROJECT_PATCH_BODY: JsonSchema = {
  ...input({
    limits: LIMITS_INPUT,
    default_max_tokens: maybe(int(`Chat output bound for requests that name none, 1–${MAX_DEFAULT_MAX_TOKENS}; null clears it`, { minimum: 1, maximum: MAX_DEFAULT_MAX_TOKENS })),
    unsupported_params: maybe(str('Chat unsupported_params policy of the project\'s keys, over gateway.yaml\'s and the provider files\' (docs/chat.md); null clears it', {
      enum: [...UNSUPPORTED_PARAMS_POLICIES, null],
    })),
    cache: CACHE_SETTING,
    guardrails: GUARDRAILS_INPUT,
    body_logging: BODY_LOGGING_INPUT,
  }),
  minProperties: 1,
};

/** A key or a project as these routes read it: its view, what its limits count now, and its detail route. */
interface Limited<R, P extends string = string> {
  noun: string;
  /** Its path parameter, and its detail route's URL, tag, summary and answer. */
  param: P;
  detail: Pick<ManagementRoute, 'url' | 'tag' | 'summary'> & { answer: JsonSchema };
  find(orgId: string, id: string): Promise<R | undefined>;
  view(r: R): object;
  scope(r: R): LimitScope;
}

/** One key or project with its limits and what they count now; PATCH changes the limits (absent fields kept, null removes). */
export function limitRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  /** The key or project, or a 404 naming it. */
  const load = async <R extends object>(kind: Limited<R>, orgId: string, id: string): Promise<R> => found(await kind.find(orgId, id), `${kind.noun} ${id}`);
  const keys: Limited<KeyListItem, 'key'> = {
    noun: 'API key', param: 'key', find: (orgId, id) => store.tenancy.getKey(orgId, id), view: (k) => keyView(k, d.now()), scope: keyScope,
    detail: {
      url: '/api/v1/orgs/:org/keys/:key', tag: 'keys', answer: KEY_DETAIL,
      summary: 'One API key with its limits and their current counts: requests and tokens in the window, requests in flight, budget spent this period and when it resets.',
    },
  };
  const projects: Limited<ProjectSummary, 'project'> = {
    noun: 'project', param: 'project', find: async (orgId, id) => (await store.tenancy.listProjects(orgId)).find((p) => p.id === id), view: projectView, scope: projectScope,
    detail: { url: '/api/v1/orgs/:org/projects/:project', tag: 'projects', answer: PROJECT_DETAIL, summary: 'One project with its limits (shared by all its keys) and their current counts.' },
  };
  const detail = async <R extends object>(kind: Limited<R>, orgId: string, id: string) => {
    const r = await load(kind, orgId, id);
    return { ...kind.view(r), usage: usageView(await readUsage(d.limiter, kind.scope(r))) };
  };
  /** GET one key or project (member access). */
  const detailRoute = <R extends object, P extends string>(kind: Limited<R, P>): ManagementRoute => ({
    method: 'GET', url: kind.detail.url, access: 'member', tag: kind.detail.tag, summary: kind.detail.summary,
    schema: { params: params('org', kind.param), response: { 200: kind.detail.answer } },
    async handler(request: FastifyRequest & { params: Record<P, string> }) {
      return detail(kind, scopeOf(request).org.id, request.params[kind.param]);
    },
  });
  /**
   * A PATCH: the new limits are checked before anything is written (a bad limit leaves
   * everything as it was), `write` stores the change (nothing back: deleted meanwhile, a
   * 404), and the answer is the detail read after.
   */
  const patch = async <R extends { id: string; limits: LimitSpec }>(
    kind: Limited<R>, orgId: string, id: string, limits: LimitsInput | undefined, write: (r: R, change: { limits?: LimitSpec }) => Promise<object | undefined>,
  ) => {
    const r = await load(kind, orgId, id);
    found(await write(r, limits === undefined ? {} : { limits: limitsFromBody(limits, r.limits) }), `${kind.noun} ${r.id}`);
    return detail(kind, orgId, r.id);
  };
  return [
    detailRoute(keys),
    detailRoute(projects),
    route({
      method: 'PATCH', url: '/api/v1/orgs/:org/keys/:key', access: 'admin', tag: 'keys',
      summary: 'Renames the key and/or changes its limits and its response-cache setting (docs/cache.md): fields left out keep their value, null removes a limit or the setting. Every instance is told at once (its key cache evicted).',
      schema: { params: params('org', 'key'), body: PATCH_BODY, response: { 200: KEY_DETAIL } },
      async handler(request) {
        return patch(keys, scopeOf(request).org.id, request.params.key, request.body.limits, (key, change) =>
          changeKey(store, d.invalidation, key, { ...change, cache: request.body.cache, name: request.body.name?.trim() }));
      },
    }),
    route({
      method: 'PATCH', url: '/api/v1/orgs/:org/projects/:project', access: 'admin', tag: 'projects',
      summary: 'Changes the project\'s limits, default_max_tokens, unsupported_params, response-cache setting (docs/cache.md), guardrails and body_logging (docs/guardrails.md): fields left out keep their value, null removes a limit or a setting.',
      schema: { params: params('org', 'project'), body: PROJECT_PATCH_BODY, response: { 200: PROJECT_DETAIL } },
      async handler(request) {
        const { body } = request;
        return patch(projects, scopeOf(request).org.id, request.params.project, body.limits, async (project, change) => {
          if (body.guardrails) await checkGuardrails(body.guardrails, d.allowPrivateWebhookUrls);
          const bodyLogging = body.body_logging === undefined ? undefined : body.body_logging && { ...DEFAULT_BODY_LOGGING, ...body.body_logging };
          return changeProject(store, d.invalidation, project, {
            ...change, defaultMaxTokens: body.default_max_tokens, unsupportedParams: body.unsupported_params, cache: body.cache, guardrails: body.guardrails, bodyLogging,
          });
        });
      },
    }),
  ];
}
