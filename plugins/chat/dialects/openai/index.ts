import { reportedTokens } from '../../../../src/sdk.js';
import { toOpenAIEffort } from '../../reasoning.js';
import type { ChatRequest } from '../../request.js';
import { MALFORMED, NOTHING, parseStreamEvent, type ChatDialect, type TokenUsage, type TranslatedEvent, type UpstreamOptions } from '../types.js';

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

interface OpenAIChunk {
  choices?: Array<{ delta?: { content?: string | null; reasoning_content?: string | null; refusal?: string | null; tool_calls?: unknown[] } }>;
  usage?: OpenAIUsage | null;
  error?: { message?: string };
}

/** OpenAI usage in the gateway's terms (cached prompt tokens are priced apart); a count that is not one throws InvalidUsage. */
export function openaiUsage(u: OpenAIUsage | null | undefined): TokenUsage | undefined {
  const promptTokens = reportedTokens(u?.prompt_tokens, 'usage.prompt_tokens');
  if (!u || promptTokens === undefined) return undefined;
  return {
    promptTokens,
    completionTokens: reportedTokens(u.completion_tokens, 'usage.completion_tokens') ?? 0,
    cachedTokens: reportedTokens(u.prompt_tokens_details?.cached_tokens, 'usage.prompt_tokens_details.cached_tokens') ?? 0,
    ...(u.completion_tokens_details?.reasoning_tokens ? { reasoningTokens: reportedTokens(u.completion_tokens_details.reasoning_tokens, 'usage.completion_tokens_details.reasoning_tokens') } : {}),
  };
}

/**
 * The OpenAI dialect is a pass-through: the client's body goes upstream with only the
 * model id replaced (and usage always requested on streams, so billing never guesses).
 * The output bound is the exception: exactly one bound field goes upstream, holding the
 * request's `maxTokens` (the one reserved for, the larger when the client sent both
 * max_tokens and max_completion_tokens), so no upstream can honour a larger one. A model
 * whose YAML says `max_tokens_param: max_completion_tokens` (OpenAI's reasoning models,
 * which refuse max_tokens) gets it under that name. Chunks are forwarded as the upstream
 * serialised them.
 */
export const openaiDialect: ChatDialect = {
  name: 'openai',
  requestBody(req: ChatRequest, upstreamModel: string, opts: UpstreamOptions = {}): string {
    const body: Record<string, unknown> = { ...req.body, model: upstreamModel };
    if (req.stream) body.stream_options = { ...(req.body.stream_options as object | undefined), include_usage: true };
    if (req.maxTokens !== undefined) {
      // Exactly one output bound goes upstream, the one reserved for: under the name the model
      // takes, or, for a model that takes either, the client's own name when it sent one alone.
      const name = opts.maxTokensParam === 'max_completion_tokens' || (body.max_completion_tokens != null && body.max_tokens == null) ? 'max_completion_tokens' : 'max_tokens';
      delete body.max_tokens;
      delete body.max_completion_tokens;
      body[name] = req.maxTokens;
    }
    if (req.native) {
      // A translated request's reasoning (Anthropic thinking, Gemini thinkingConfig, Responses reasoning) as
      // reasoning_effort, for a model that reasons; a model that does not gets none (reasoning.ts).
      delete body.reasoning_effort;
      const effort = req.reasoning && opts.reasoning ? toOpenAIEffort(req.reasoning) : undefined;
      if (effort) body.reasoning_effort = effort;
    }
    return JSON.stringify(body);
  },
  pathVars: (_req, upstreamModel) => ({ model: upstreamModel }),
  response(body, ctx) {
    const completion = JSON.parse(body) as Record<string, unknown> & { usage?: OpenAIUsage };
    if (typeof completion !== 'object' || completion === null || !Array.isArray(completion.choices)) throw new Error('not a chat completion');
    const usage = openaiUsage(completion.usage);
    // The object is this call's own parse: set in place (same key order as a copy), not copied.
    completion.model = ctx.requestedModel;
    return { completion, usage };
  },
  streamTranslator() {
    return {
      onEvent(_event, data): TranslatedEvent {
        if (data === '[DONE]') return { ...NOTHING, done: true };
        const chunk = parseStreamEvent<OpenAIChunk>(data);
        if (!chunk) return MALFORMED;
        if (chunk.error) return { ...NOTHING, error: chunk.error.message ?? 'upstream error' };
        const choices = chunk.choices ?? [];
        // The usage-only chunk is kept apart: the plugin adds cost and decides whether the client asked for it.
        if (chunk.usage && choices.length === 0) {
          return { ...NOTHING, usage: openaiUsage(chunk.usage), usageChunk: chunk as Record<string, unknown> };
        }
        // OpenAI streams about one token per chunk.
        const delivered = choices.reduce((n, c) => n + (c.delta?.content || c.delta?.reasoning_content || c.delta?.refusal || c.delta?.tool_calls?.length ? 1 : 0), 0);
        return { chunks: [data], usage: openaiUsage(chunk.usage), deliveredTokens: delivered, done: false };
      },
    };
  },
};
