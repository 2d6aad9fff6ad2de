import { formatSse, type GatewayError } from '../../../../src/sdk.js';
import { completionReasoning, completionToolCalls, firstChoice, type ReplyContext, type TokenUsage } from '../../dialects/types.js';
import { costFields, type ChatCost } from '../../metering.js';
import { argumentsObject } from '../../tools.js';

/**
 * Canonical (OpenAI) replies → Gemini API replies (GenerateContentResponse), for
 * clients of the Gemini-native endpoint whose model is served by another dialect.
 */

const FINISH: Readonly<Record<string, string>> = { stop: 'STOP', length: 'MAX_TOKENS', content_filter: 'SAFETY', tool_calls: 'STOP' };

const STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 402: 'FAILED_PRECONDITION', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND',
  405: 'NOT_FOUND', 410: 'NOT_FOUND', 413: 'INVALID_ARGUMENT', 415: 'INVALID_ARGUMENT', 422: 'FAILED_PRECONDITION', 429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED', 500: 'INTERNAL', 502: 'UNAVAILABLE', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

/**
 * A gateway error in Google's shape, so @google/genai raises its ApiError with the
 * status and message: `{error: {code, message, status}}`; the gateway's stable code,
 * param and routing go in an ErrorInfo detail.
 */
export function formatGeminiError(err: GatewayError): unknown {
  const { param, usedProvider, requestedModel } = err.extras;
  const metadata = Object.fromEntries(Object.entries({ param, usedProvider, requestedModel }).filter(([, v]) => typeof v === 'string' && v !== ''));
  return {
    error: {
      code: err.status, message: err.message, status: STATUS[err.status] ?? (err.status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: err.code, domain: 'tollgate', metadata }],
    },
  };
}

/** usageMetadata with the gateway's cost fields. */
export function geminiUsageObject(u: TokenUsage, c: ChatCost | undefined): Record<string, unknown> {
  const thoughts = u.reasoningTokens ?? 0;
  return {
    promptTokenCount: u.promptTokens,
    candidatesTokenCount: u.completionTokens - thoughts,
    totalTokenCount: u.promptTokens + u.completionTokens,
    ...(u.cachedTokens ? { cachedContentTokenCount: u.cachedTokens } : {}),
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
    ...(c ? costFields(c) : {}),
  };
}

function responseObject(ctx: ReplyContext, parts: unknown[], finish: string | undefined, usage: Record<string, unknown> | undefined): Record<string, unknown> {
  return {
    candidates: [{ content: { role: 'model', parts }, ...(finish ? { finishReason: finish } : {}), index: 0 }],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: ctx.requestedModel, responseId: ctx.id.replace(/^chatcmpl-/, ''),
  };
}

/** A canonical chat.completion as a GenerateContentResponse: the reasoning as a `thought: true` part, text, then a functionCall part per tool call. */
export function geminiFromCompletion(completion: Record<string, unknown>, text: string, ctx: ReplyContext, u: TokenUsage, c: ChatCost): Record<string, unknown> {
  const choice = Array.isArray(completion.choices) ? (completion.choices[0] as { finish_reason?: unknown } | undefined) : undefined;
  const calls = completionToolCalls(completion).map((t) => ({ functionCall: { id: t.id, name: t.function.name, args: argumentsObject(t.function.arguments) } }));
  const reasoning = completionReasoning(completion);
  const parts = [...(reasoning ? [{ text: reasoning, thought: true }] : []), ...(text ? [{ text }] : []), ...calls];
  return responseObject(ctx, parts.length > 0 ? parts : [{ text: '' }], FINISH[String(choice?.finish_reason)] ?? 'STOP', geminiUsageObject(u, c));
}

export interface GeminiEncoder {
  chunk(data: string): string[];
  finish(usage: TokenUsage, cost: ChatCost): string[];
}

/**
 * Canonical chunks → `alt=sse` events, each a whole GenerateContentResponse: one per
 * text delta (reasoning as `thought: true` parts); function calls (Gemini sends each whole) are gathered from their
 * argument deltas and sent in the last event, with the finish reason and the usage.
 */
export function geminiEncoder(ctx: ReplyContext): GeminiEncoder {
  const calls: Array<{ id: string; name: string; args: string }> = [];
  let finish = 'STOP';
  return {
    chunk(data) {
      const choice = firstChoice(data);
      for (const d of choice?.delta?.tool_calls ?? []) {
        const call = (calls[d.index ?? 0] ??= { id: '', name: '', args: '' });
        call.id ||= d.id ?? '';
        call.name ||= d.function?.name ?? '';
        call.args += d.function?.arguments ?? '';
      }
      if (choice?.finish_reason) finish = FINISH[choice.finish_reason] ?? 'STOP';
      const parts = [
        ...(choice?.delta?.reasoning_content ? [{ text: choice.delta.reasoning_content, thought: true }] : []),
        ...(choice?.delta?.content ? [{ text: choice.delta.content }] : []),
      ];
      return parts.length > 0 ? [formatSse(JSON.stringify(responseObject(ctx, parts, undefined, undefined)))] : [];
    },
    finish(u, c) {
      const parts = calls.filter(Boolean).map((k) => ({ functionCall: { id: k.id, name: k.name, args: argumentsObject(k.args) } }));
      return [formatSse(JSON.stringify(responseObject(ctx, parts.length > 0 ? parts : [{ text: '' }], finish, geminiUsageObject(u, c))))];
    },
  };
}
