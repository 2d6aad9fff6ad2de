import {
  type EndpointDef, estimateTokens, fillPath, GatewayError, InvalidUsage, type ModalityHandler, type ModelRoute, reportedTokens, upstreamText,
} from '../../../../src/sdk.js';
import { chatTexts, isObject, type ChatRequest } from '../../request.js';
import { parseMessagesRequest } from './validate.js';

/** The provider endpoint (YAML key) that counts a Messages request's tokens: Anthropic's `/messages/count_tokens`. */
export const COUNT_ENDPOINT = 'count-tokens';

/** The provider's token-counting endpoint for this route, when it declares one that speaks Anthropic Messages. */
function countEndpoint(route: ModelRoute): EndpointDef | undefined {
  const e = route.provider.endpoints[COUNT_ENDPOINT];
  return e?.dialect === 'anthropic-messages' ? e : undefined;
}

/**
 * The gateway's own count, for a model whose provider has no counting endpoint: the
 * prompt text (system and messages) and the declared tools at ~4 characters a token,
 * the estimate the gateway bills by when a provider reports no usage.
 */
export function estimateInputTokens(req: ChatRequest): number {
  const tools = req.native?.body.tools;
  return estimateTokens(req.prompt ?? '') + (Array.isArray(tools) && tools.length > 0 ? estimateTokens(JSON.stringify(tools)) : 0);
}

const reply = (body: unknown): string => JSON.stringify(body);

/**
 * `POST /v1/messages/count_tokens` (Anthropic's token counting): the body of a
 * /v1/messages request, answered `{"input_tokens": N}`. Free, so nothing is reserved and
 * the log row costs 0 (`extra.count_tokens`). A model whose provider declares a
 * `count-tokens` endpoint (Anthropic) is counted there, the body sent as the client
 * wrote it; any other is estimated by the gateway without an upstream call.
 */
export const countTokensHandler: ModalityHandler<ChatRequest> = {
  modality: 'chat',
  parse: (body, request) => parseMessagesRequest(body, request.headers, request.jsonText),
  // The prompt reaches the provider's count endpoint too: the project's guardrails see it.
  texts: chatTexts,
  endpoint: (_req, route) => countEndpoint(route),
  servedLocally: (_req, route) => route.endpoint.name !== COUNT_ENDPOINT,
  maxCostPicos: () => 0n,
  maxTokens: () => 0,
  buildUpstream(req, route) {
    const upstreamModel = route.model.upstreamId;
    return {
      path: fillPath(route.endpoint.path, { model: upstreamModel }),
      body: JSON.stringify({ ...req.native?.body, model: upstreamModel }),
      contentType: 'application/json',
      headers: { accept: 'application/json', ...req.native?.headers },
      stream: false,
    };
  },
  async respond({ ex, upstream, reply: res }) {
    const text = await upstreamText(upstream, ex.abort.signal);
    let body: unknown;
    let tokens: number | undefined;
    try {
      body = JSON.parse(text);
      tokens = isObject(body) ? reportedTokens(body.input_tokens, 'input_tokens') : undefined;
    } catch (err) {
      throw new GatewayError('upstream_error', [err instanceof InvalidUsage ? err.message : 'the upstream sent a malformed token count']);
    }
    if (tokens === undefined) throw new GatewayError('upstream_error', ['the upstream sent a malformed token count']);
    void res.code(200).type('application/json').send(reply(body));
    return { costPicos: 0n, extra: { count_tokens: true, input_tokens: tokens } };
  },
  async respondLocally({ parsed, reply: res }) {
    const tokens = estimateInputTokens(parsed);
    void res.code(200).type('application/json').send(reply({ input_tokens: tokens }));
    return { costPicos: 0n, extra: { count_tokens: true, input_tokens: tokens, estimated: true } };
  },
};
