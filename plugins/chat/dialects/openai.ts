import type { ChatRequest } from '../validate.js';
import type { ChatDialect, TokenUsage, TranslatedEvent } from './types.js';

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/** OpenAI usage in the gateway's terms (cached prompt tokens are priced apart). */
export function openaiUsage(u: OpenAIUsage | null | undefined): TokenUsage | undefined {
  if (!u || typeof u.prompt_tokens !== 'number') return undefined;
  return {
    promptTokens: u.prompt_tokens,
    completionTokens: u.completion_tokens ?? 0,
    cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/**
 * The OpenAI dialect is a pass-through: the client's body goes upstream with only the
 * model id replaced (and usage always requested on streams, so billing never guesses).
 */
export const openaiDialect: ChatDialect = {
  name: 'openai',
  requestBody(req: ChatRequest, upstreamModel: string): string {
    const body: Record<string, unknown> = { ...req.body, model: upstreamModel };
    if (req.stream) body.stream_options = { ...(req.body.stream_options as object | undefined), include_usage: true };
    return JSON.stringify(body);
  },
  pathVars: (_req, upstreamModel) => ({ model: upstreamModel }),
  response(body, requestedModel) {
    const completion = JSON.parse(body) as Record<string, unknown> & { usage?: OpenAIUsage };
    return { completion: { ...completion, model: requestedModel }, usage: openaiUsage(completion.usage) };
  },
  streamTranslator() {
    return {
      onEvent(_event, data): TranslatedEvent {
        if (data === '[DONE]') return { chunks: [], deliveredTokens: 0, done: true };
        let chunk: { choices?: Array<{ delta?: { content?: string | null } }>; usage?: OpenAIUsage | null; error?: { message?: string } };
        try {
          chunk = JSON.parse(data) as typeof chunk;
        } catch {
          return { chunks: [], deliveredTokens: 0, done: false, error: 'the upstream sent a malformed stream event' };
        }
        if (chunk.error) return { chunks: [], deliveredTokens: 0, done: false, error: chunk.error.message ?? 'upstream error' };
        const delivered = (chunk.choices ?? []).reduce((n, c) => n + (c.delta?.content ? 1 : 0), 0);
        // The usage-only chunk is kept apart: the plugin adds cost and decides whether the client asked for it.
        if (chunk.usage && (chunk.choices ?? []).length === 0) {
          return { chunks: [], usage: openaiUsage(chunk.usage), usageChunk: chunk as Record<string, unknown>, deliveredTokens: 0, done: false };
        }
        return { chunks: [data], usage: openaiUsage(chunk.usage), deliveredTokens: delivered, done: false };
      },
    };
  },
};
