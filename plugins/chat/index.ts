import { fillPath, type GatewayPlugin, invalidField, type ModalityHandler } from '../../src/sdk.js';
import { CLIENT_FORMATS } from './formats/index.js';
import type { ClientFormat } from './formats/types.js';
import { DIALECTS, dialectNamed } from './dialects/index.js';
import type { ReplyContext } from './dialects/types.js';
import { maxChatCostPicos } from './metering.js';
import type { ChatRequest } from './request.js';
import { respondChat } from './respond.js';

/** The chat handler for one client format: the same models, routes, metering and streaming behind each endpoint. */
function chatHandler(format: ClientFormat): ModalityHandler<ChatRequest> {
  return {
    modality: 'chat',
    parse: (body, request) => format.parse(body, request.headers),
    checkRoute(req, route) {
      const dialect = dialectNamed(route.endpoint.dialect);
      if (req.native && dialect.name === format.nativeDialect) return; // sent as the client wrote it
      const problem = req.untranslatable ?? dialect.unsupported?.(req);
      if (problem) throw invalidField(problem.param, problem.message);
    },
    maxCostPicos: (req, route) => maxChatCostPicos(req, route.model),
    buildUpstream(req, route) {
      const dialect = dialectNamed(route.endpoint.dialect);
      const upstreamModel = route.model.upstreamId;
      return {
        path: fillPath(route.endpoint.path, dialect.pathVars(req, upstreamModel)),
        query: dialect.query?.(req),
        body: dialect.requestBody(req, upstreamModel, { maxTokensParam: route.model.maxTokensParam }),
        contentType: 'application/json',
        headers: { accept: req.stream ? 'text/event-stream' : 'application/json', ...dialect.headers?.(req) },
      };
    },
    respond(ctx) {
      const reply: ReplyContext = {
        requestedModel: ctx.parsed.model,
        id: `chatcmpl-${ctx.ex.id.replace(/^req_/, '')}`,
        created: Math.floor(ctx.ex.startedAt / 1000),
      };
      return respondChat(ctx, format.codec(dialectNamed(ctx.route.endpoint.dialect), ctx.parsed, reply));
    },
  };
}

/**
 * Chat across providers: one route per client format (formats/index.ts) —
 * `POST /v1/chat/completions` (OpenAI) and `POST /v1/messages` (Anthropic) — each
 * served by every chat model whatever its provider's dialect.
 */
export const chatPlugin: GatewayPlugin = {
  name: 'chat',
  modalities: { chat: { requiredPricing: ['prompt', 'completion'], dialects: [...DIALECTS.keys()] } },
  register(api) {
    for (const format of CLIENT_FORMATS) {
      api.modelRoute({ method: 'POST', url: format.url, keyHeaders: format.keyHeaders, formatError: format.formatError, handler: chatHandler(format) });
    }
  },
};
