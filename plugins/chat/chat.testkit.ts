import { expect } from 'vitest';
import { GatewayError, SseDecoder, type SseEvent } from '../../src/sdk.js';
import type { ReplyContext, StreamTranslator, TokenUsage } from './dialects/types.js';
import type { ChatRequest } from './request.js';
import { parseChatRequest } from './formats/openai/validate.js';

/** Shared fixtures for the chat unit tests (not loaded by the gateway). */

export const CTX: ReplyContext = Object.freeze({ requestedModel: 'asked-model', id: 'chatcmpl-test', created: 1_700_000_000 });

/** Freezes a value and everything in it, so a translation that mutates its input throws. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Expects `parse` to refuse its request: a 400 `invalid_request` naming `param` (the body itself: ''). */
export function expectRefusal(parse: () => unknown, param: string): void {
  let refusal: unknown;
  try {
    parse();
  } catch (err) {
    refusal = err;
  }
  expect(refusal).toBeInstanceOf(GatewayError);
  expect((refusal as GatewayError).status).toBe(400);
  expect((refusal as GatewayError).toBody().error).toMatchObject({ code: 'invalid_request', param: param || null });
}

/** A validated, frozen canonical request from an OpenAI chat body. */
export function chatRequest(body: Record<string, unknown>): ChatRequest {
  return deepFreeze(parseChatRequest({ model: 'asked-model', ...body }));
}

/** A tool call assembled from stream deltas. */
export interface StreamedCall {
  id: string;
  name: string;
  arguments: string;
}

interface ToolCallDelta { index: number; id?: string; function?: { name?: string; arguments?: string } }

export interface StreamRun {
  /** Parsed canonical chunks, in order. */
  chunks: Array<Record<string, unknown>>;
  text: string;
  /** Tool calls assembled from the deltas, by index. */
  toolCalls: StreamedCall[];
  finish: string | null;
  usage: TokenUsage | undefined;
  delivered: number;
  done: boolean;
  error: string | undefined;
}

/** Feeds SSE events (name, data) to a translator and gathers what came out. */
export function runStream(translator: StreamTranslator, events: Array<[string | undefined, string]>): StreamRun {
  const run: StreamRun = { chunks: [], text: '', toolCalls: [], finish: null, usage: undefined, delivered: 0, done: false, error: undefined };
  for (const [event, data] of events) {
    const t = translator.onEvent(event, data);
    for (const c of t.chunks) {
      const chunk = JSON.parse(c) as Record<string, unknown> & { choices?: Array<{ delta?: { content?: string; tool_calls?: ToolCallDelta[] }; finish_reason?: string | null }> };
      run.chunks.push(chunk);
      run.text += chunk.choices?.[0]?.delta?.content ?? '';
      for (const d of chunk.choices?.[0]?.delta?.tool_calls ?? []) {
        const call = (run.toolCalls[d.index] ??= { id: '', name: '', arguments: '' });
        call.id ||= d.id ?? '';
        call.name ||= d.function?.name ?? '';
        call.arguments += d.function?.arguments ?? '';
      }
      run.finish = chunk.choices?.[0]?.finish_reason ?? run.finish;
    }
    run.usage = t.usage ?? run.usage;
    run.delivered += t.deliveredTokens;
    run.done ||= t.done;
    if (t.error) {
      run.error = t.error;
      break;
    }
  }
  return run;
}

/** The SSE events in a piece of serialised stream text (test support). */
export function parseSseText(text: string): SseEvent[] {
  const d = new SseDecoder();
  return [...d.push(new TextEncoder().encode(text)), ...d.end()];
}
