import type { ChatRequest } from './request.js';

/**
 * The operator's way out of the max_tokens rule (docs/chat.md, "The max_tokens rule";
 * issue 29): clients such as the OpenAI Agents SDK send no output bound, and Anthropic
 * refuses a request without one. When the request names none in its format, `bound`
 * (the project's `default_max_tokens`, else `settings.chat.default_max_tokens`) becomes
 * its `maxTokens` — what the credit hold, the budget and the tpm limit are computed from
 * — and is written into the bodies that go upstream: the canonical one every translating
 * dialect reads, and the client's own body that a provider of the same format gets
 * nearly as sent (Messages → Anthropic, Gemini → Gemini, Responses → OpenAI Responses).
 * The request-log row says so (`extra.default_max_tokens`). A request that names a bound,
 * or `bound` undefined, is returned as it is.
 */
export function withDefaultMaxTokens(req: ChatRequest, bound: number | undefined): ChatRequest {
  if (req.maxTokens !== undefined || bound === undefined) return req;
  return {
    ...req,
    maxTokens: bound,
    body: { ...req.body, max_tokens: bound },
    logExtra: { ...req.logExtra, default_max_tokens: bound },
    ...(req.native ? { native: { ...req.native, body: nativeWithBound(req.native.format, req.native.body, bound) } } : {}),
  };
}

/** The client's body with the bound under its format's own name. */
function nativeWithBound(format: NonNullable<ChatRequest['native']>['format'], body: Record<string, unknown>, bound: number): Record<string, unknown> {
  switch (format) {
    case 'anthropic':
      return { ...body, max_tokens: bound };
    case 'responses':
      return { ...body, max_output_tokens: bound };
    case 'gemini': {
      const config = typeof body.generationConfig === 'object' && body.generationConfig !== null ? body.generationConfig : {};
      return { ...body, generationConfig: { ...config, maxOutputTokens: bound } };
    }
  }
}
