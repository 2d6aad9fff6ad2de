import type { GatewayError } from '../../../../src/sdk.js';
import type { ClientFormat } from '../types.js';
import { countTokensHandler } from './count.js';
import { anthropicEncoder, errorFrame, messageFromCompletion } from './encode.js';
import { nativeAnthropicCodec } from './native.js';
import { translatedCodec } from '../translate.js';
import { parseMessagesRequest } from './validate.js';

/** Anthropic error types by HTTP status, as the Anthropic API names them. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error',
  404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 504: 'timeout_error', 529: 'overloaded_error',
};

/**
 * A gateway error in Anthropic's shape, so the Anthropic SDKs raise their usual
 * exceptions: `error.type` is Anthropic's name for the status; the gateway's stable
 * code stays in `error.code`, with `param`, `usedProvider` and `requestedModel` when known.
 */
export function formatAnthropicError(err: GatewayError): unknown {
  const { param, usedProvider, requestedModel } = err.extras;
  const type = ERROR_TYPES[err.status] ?? (err.status >= 500 ? 'api_error' : 'invalid_request_error');
  return {
    type: 'error',
    error: {
      type, message: err.message, code: err.code,
      ...(param ? { param } : {}),
      ...(usedProvider !== undefined ? { usedProvider } : {}),
      ...(requestedModel !== undefined ? { requestedModel } : {}),
    },
  };
}

/**
 * The Anthropic Messages format (`/v1/messages`, and its token counting). An Anthropic-dialect provider gets
 * the request untouched and its reply is forwarded (nativeAnthropicCodec); any other
 * provider's reply is translated from the canonical form, event by event.
 */
export const anthropicFormat: ClientFormat = {
  name: 'anthropic',
  urls: ['/v1/messages'],
  keyHeaders: ['x-api-key'],
  formatError: formatAnthropicError,
  nativeDialect: 'anthropic-messages',
  parse: (input) => parseMessagesRequest(input.body, input.headers, input.text),
  modelRoutes: [{ method: 'POST', url: '/v1/messages/count_tokens', keyHeaders: ['x-api-key'], formatError: formatAnthropicError, handler: countTokensHandler }],
  clientParam: (p) => (p.startsWith('messages[') ? 'messages' : p),
  codec(dialect, req, ctx) {
    if (dialect.name === 'anthropic-messages' && req.native?.format === 'anthropic') return nativeAnthropicCodec(ctx, formatAnthropicError);
    return translatedCodec(dialect, ctx, {
      render: (completion, text, u, c) => messageFromCompletion(completion, text, ctx, u, c),
      encoder: () => ({ ...anthropicEncoder(ctx), fail: (err) => [errorFrame(formatAnthropicError(err))] }),
    });
  },
};
