import {
  type EndpointDef, type Exchange, fillPath, type GatewayPlugin, invalidField, type ModalityHandler, type ModelRoute, type PluginApi, type ResponseCacheApi,
} from '../../src/sdk.js';
import { budgetCheckRoute } from './budget-bound.js';
import { chatCacheDef, respondCaching } from './cache.js';
import { withDefaultMaxTokens } from './default-max-tokens.js';
import { COUNT_ENDPOINT } from './formats/anthropic/count.js';
import { clientFormats, NATIVE_ONLY_DIALECTS } from './formats/index.js';
import type { ChatSettings, ClientFormat } from './formats/types.js';
import { DIALECTS } from './dialects/index.js';
import type { ChatDialect, ReplyContext } from './dialects/types.js';
import { maxChatCostPicos, maxChatTokens } from './metering.js';
import { chatTexts, type ChatRequest } from './request.js';
import { respondChat } from './respond.js';
import { chatSettingsSchema } from './settings.js';
import { DROPPED_HEADER, policyOf, resolveUnsupported, type Resolution } from './unsupported.js';

/** The upstream dialects, and the formats' own that serve only their native requests (OpenAI /responses). */
const ALL_DIALECTS: ReadonlyMap<string, ChatDialect> = new Map([...DIALECTS, ...NATIVE_ONLY_DIALECTS.map((d) => [d.name, d] as const)]);

function dialectOf(route: ModelRoute): ChatDialect {
  const d = ALL_DIALECTS.get(route.endpoint.dialect ?? 'openai');
  if (!d) throw new Error(`chat dialect ${route.endpoint.dialect} is not loaded`);
  return d;
}

/** The provider's endpoint that speaks this format natively (e.g. OpenAI's /responses), if it declares one. */
function nativeEndpoint(format: ClientFormat, route: ModelRoute): EndpointDef | undefined {
  // An endpoint models name serves those models only (Vertex: Claude's beside Gemini's), and such a model is served there only.
  if (route.endpoint.dialect === format.nativeDialect || route.model.endpoint !== undefined) return undefined;
  return Object.values(route.provider.endpoints)
    .find((e) => e.modality === 'chat' && e.dialect === format.nativeDialect && e.name !== COUNT_ENDPOINT && !e.namedByModels);
}

/** Whether a request goes to this dialect as the client wrote it (its own format). */
const sentNative = (format: ClientFormat, req: ChatRequest, dialect: ChatDialect): boolean => req.native !== undefined && dialect.name === format.nativeDialect;

/**
 * The chat handler for one client format: the same models, routes, metering and
 * streaming behind each endpoint. `settings.unsupported_params` is the gateway-wide override,
 * under the key's project's own.
 */
/** The ids and time a reply carries: the request's own. */
const replyContext = (ex: Exchange, req: ChatRequest): ReplyContext => ({
  requestedModel: req.model,
  id: `chatcmpl-${ex.id.replace(/^req_/, '')}`,
  created: Math.floor(ex.startedAt / 1000),
});

function chatHandler(format: ClientFormat, settings: ChatSettings, cache: ResponseCacheApi): ModalityHandler<ChatRequest> {
  /** What this route does with the request's unsupported parameters (unsupported.ts); throws the 400 under `error`. */
  const resolution = (req: ChatRequest, route: ModelRoute): Resolution => {
    const dialect = dialectOf(route);
    if (sentNative(format, req, dialect)) return { body: req.body, dropped: [], translated: [], reasoningDropped: false };
    return resolveUnsupported(req, dialect.name, policyOf(route, req.projectPolicy, settings.unsupported_params), { clientParam: format.clientParam });
  };
  return {
    modality: 'chat',
    async parse(body, request) {
      const ex = request.exchange;
      const parsed = await format.parse({
        body, text: request.jsonText, headers: request.headers, params: (request.params ?? {}) as Record<string, string>,
        query: (request.query ?? {}) as Record<string, unknown>, orgId: ex.org?.id ?? '',
      });
      // The parse runs after auth, so the key's project (read with the key, cached with it) is known here.
      const bound = ex.project?.defaultMaxTokens ?? settings.default_max_tokens ?? undefined;
      const req = withDefaultMaxTokens(parsed, bound);
      const projectPolicy = ex.project?.unsupportedParams;
      return projectPolicy ? { ...req, projectPolicy } : req;
    },
    texts: chatTexts,
    endpoint: (req, route) => (req.native?.format === format.name ? nativeEndpoint(format, route) : undefined),
    checkRoute(req, route) {
      const dialect = dialectOf(route);
      if (sentNative(format, req, dialect)) return; // sent as the client wrote it
      const problem = req.untranslatable ?? dialect.unsupported?.(req);
      if (problem) {
        const param = format.clientParam?.(problem.param) ?? problem.param;
        throw invalidField(param, param === problem.param ? problem.message : problem.message.replace(problem.param, param));
      }
      resolution(req, route);
    },
    maxCostPicos: (req, route) => maxChatCostPicos(req, route.model),
    maxTokens: (req, route) => maxChatTokens(req, route.model),
    buildUpstream(req, route) {
      const dialect = dialectOf(route);
      const upstreamModel = route.model.upstreamId;
      const resolved = resolution(req, route);
      req = { ...req, body: resolved.body, reasoning: resolved.reasoningDropped ? undefined : req.reasoning };
      const opts = { maxTokensParam: route.model.maxTokensParam, reasoning: route.model.capabilities.reasoning, dialectOptions: route.endpoint.dialectOptions };
      return {
        path: fillPath(route.endpoint.path, dialect.pathVars(req, upstreamModel, opts)),
        query: dialect.query?.(req),
        body: dialect.requestBody(req, upstreamModel, opts),
        contentType: 'application/json',
        headers: { accept: req.stream ? 'text/event-stream' : 'application/json', ...dialect.headers?.(req, opts) },
        stream: req.stream,
      };
    },
    async respond(ctx) {
      const { dropped } = resolution(ctx.parsed, ctx.route);
      if (dropped.length > 0) void ctx.reply.header(DROPPED_HEADER, dropped.join(', '));
      const reply = replyContext(ctx.ex, ctx.parsed);
      const dialect = dialectOf(ctx.route);
      // A reply the response cache wants is read through a copy of its bytes, stored once billed (cache.ts).
      const metered = await respondCaching(cache, ctx, dialect, reply, (c) => respondChat(c, format.codec(dialect, c.parsed, reply, { orgId: c.ex.org?.id ?? '' })));
      return dropped.length > 0 ? { ...metered, extra: { dropped_params: dropped, ...metered.extra } } : metered;
    },
  };
}

/**
 * Chat across providers: the routes of every client format (formats/index.ts) —
 * `POST /v1/chat/completions` (OpenAI), `POST /v1/messages` (Anthropic),
 * `POST /v1/responses` (OpenAI Responses) and the Gemini API's generateContent — each
 * served by every chat model whatever its provider's dialect.
 */
export const chatPlugin: GatewayPlugin = {
  name: 'chat',
  settingsSchema: chatSettingsSchema,
  modalities: { chat: { requiredPricing: ['prompt', 'completion'], dialects: [...ALL_DIALECTS.keys()] } },
  register(api: PluginApi) {
    const settings = api.settings as ChatSettings;
    api.orgRoute(budgetCheckRoute(api, () => settings.default_max_tokens ?? undefined));
    for (const format of clientFormats({ store: api.store, now: () => api.now(), settings })) {
      for (const url of format.urls) {
        const handler = api.cache.cached(chatHandler(format, settings, api.cache), chatCacheDef(format, replyContext));
        api.modelRoute({ method: 'POST', url, keyHeaders: format.keyHeaders, keyQuery: format.keyQuery, formatError: format.formatError, handler });
      }
      for (const route of format.modelRoutes ?? []) api.modelRoute(route);
      for (const route of format.routes ?? []) api.route(route);
    }
    api.task({
      name: 'chat-responses-sweep',
      intervalMs: settings.responses.sweep_interval_ms,
      async run() {
        let deleted = 0;
        for (let n = -1; n !== 0; deleted += n) n = await api.store.records.deleteExpired(api.now(), 500);
        return `deleted ${deleted} expired stored response(s)`;
      },
    });
  },
};
