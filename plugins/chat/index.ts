import type { FastifyRequest } from 'fastify';
import { fillPath, type GatewayPlugin, invalidField, type ModalityHandler } from '../../src/sdk.js';
import { openaiFormat } from './formats/openai/index.js';
import type { ClientFormat } from './formats/types.js';
import { DIALECTS, dialectNamed } from './dialects/index.js';
import type { ReplyContext } from './dialects/types.js';
import { anthropicFormat, formatAnthropicError } from './formats/anthropic/index.js';
import { parseMessagesRequest } from './formats/anthropic/validate.js';
import { maxChatCostPicos } from './metering.js';
import type { ChatRequest } from './request.js';
import { respondChat } from './respond.js';
import { parseChatRequest } from './formats/openai/validate.js';

/** The chat handler for one client format: the same models, routes, metering and streaming behind each endpoint. */
function chatHandler(format: ClientFormat, parse: (body: unknown, request: FastifyRequest) => ChatRequest): ModalityHandler<ChatRequest> {
  return {
    modality: 'chat',
    parse,
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
        body: dialect.requestBody(req, upstreamModel),
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
 * Chat completions across providers: `POST /v1/chat/completions` (OpenAI format) and
 * `POST /v1/messages` (Anthropic format, for Anthropic SDK users), both served by
 * every chat model whatever its provider's dialect.
 */
export const chatPlugin: GatewayPlugin = {
  name: 'chat',
  modalities: { chat: { requiredPricing: ['prompt', 'completion'], dialects: [...DIALECTS.keys()] } },
  register(api) {
    api.modelRoute({ method: 'POST', url: '/v1/chat/completions', handler: chatHandler(openaiFormat, (body) => parseChatRequest(body)) });
    api.modelRoute({
      method: 'POST',
      url: '/v1/messages',
      acceptXApiKey: true,
      formatError: formatAnthropicError,
      handler: chatHandler(anthropicFormat, (body, request) => parseMessagesRequest(body, request.headers)),
    });
  },
};
