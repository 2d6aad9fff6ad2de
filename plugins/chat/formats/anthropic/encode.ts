import { formatSse } from '../../../../src/sdk.js';
import type { ReplyContext, TokenUsage } from '../../dialects/types.js';
import { costFields, type ChatCost } from '../../metering.js';

/**
 * Canonical (OpenAI) replies → Anthropic Messages replies, for /v1/messages clients
 * of models whose provider speaks another dialect. Pure: per-stream state lives in
 * the encoder each call creates.
 */

const STOP_REASONS: Readonly<Record<string, string>> = { stop: 'end_turn', length: 'max_tokens', content_filter: 'refusal', tool_calls: 'tool_use' };

export function stopReason(finish: unknown): string {
  return (typeof finish === 'string' ? STOP_REASONS[finish] : undefined) ?? 'end_turn';
}

/** `msg_…` id of a reply the gateway builds itself. */
export function messageId(ctx: ReplyContext): string {
  return `msg_${ctx.id.replace(/^chatcmpl-/, '')}`;
}

/** Usage in Anthropic's shape (input_tokens exclude cache reads and writes), plus the gateway's cost fields. */
export function anthropicUsageObject(u: TokenUsage, c: ChatCost | undefined): Record<string, number> {
  const read = Math.min(u.cachedTokens ?? 0, u.promptTokens);
  const write = Math.min(u.cacheWriteTokens ?? 0, u.promptTokens - read);
  return {
    input_tokens: u.promptTokens - read - write,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    output_tokens: u.completionTokens,
    ...(c ? costFields(c) : {}),
  };
}

/** A canonical chat.completion as an Anthropic message. */
export function messageFromCompletion(completion: Record<string, unknown>, text: string, ctx: ReplyContext, u: TokenUsage, c: ChatCost): Record<string, unknown> {
  const choice = Array.isArray(completion.choices) ? (completion.choices[0] as { finish_reason?: unknown } | undefined) : undefined;
  return {
    id: messageId(ctx), type: 'message', role: 'assistant', model: ctx.requestedModel,
    content: text ? [{ type: 'text', text }] : [],
    stop_reason: stopReason(choice?.finish_reason), stop_sequence: null,
    usage: anthropicUsageObject(u, c),
  };
}

/** The Anthropic `event: error` frame for a stream that broke. */
export function errorFrame(body: unknown): string {
  return formatSse(JSON.stringify(body), 'error');
}

interface CanonicalChunk {
  choices?: Array<{ index?: number; delta?: { content?: string | null }; finish_reason?: string | null }>;
}

export interface AnthropicEncoder {
  /** Frames for one canonical chunk; `usage` is what the upstream reported so far (for message_start). */
  chunk(data: string, usage: TokenUsage | undefined): string[];
  /** The closing frames, with the billed usage and its cost in message_delta. */
  finish(usage: TokenUsage, cost: ChatCost): string[];
}

/**
 * Canonical chunks → Anthropic named events: message_start on the first, one text
 * block (content_block_start, content_block_delta…), and at the end
 * content_block_stop, message_delta with the usage and cost, message_stop.
 */
export function anthropicEncoder(ctx: ReplyContext): AnthropicEncoder {
  let started = false;
  let blockOpen = false;
  let stop = 'end_turn';
  const start = (u: TokenUsage | undefined): string[] => {
    if (started) return [];
    started = true;
    const usage = u ? { ...anthropicUsageObject(u, undefined), output_tokens: 0 } : { input_tokens: 0, output_tokens: 0 };
    const message = { id: messageId(ctx), type: 'message', role: 'assistant', model: ctx.requestedModel, content: [], stop_reason: null, stop_sequence: null, usage };
    return [formatSse(JSON.stringify({ type: 'message_start', message }), 'message_start')];
  };
  return {
    chunk(data, usage) {
      const frames = start(usage);
      const choice = (JSON.parse(data) as CanonicalChunk).choices?.find((c) => (c.index ?? 0) === 0);
      const text = choice?.delta?.content;
      if (text) {
        if (!blockOpen) frames.push(formatSse('{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}', 'content_block_start'));
        blockOpen = true;
        frames.push(formatSse(JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }), 'content_block_delta'));
      }
      if (choice?.finish_reason) stop = stopReason(choice.finish_reason);
      return frames;
    },
    finish(u, c) {
      const frames = start(u);
      if (blockOpen) frames.push(formatSse('{"type":"content_block_stop","index":0}', 'content_block_stop'));
      blockOpen = false;
      const delta = { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: anthropicUsageObject(u, c) };
      frames.push(formatSse(JSON.stringify(delta), 'message_delta'), formatSse('{"type":"message_stop"}', 'message_stop'));
      return frames;
    },
  };
}
