import { formatSse } from '../../../../src/sdk.js';
import { completionReasoning, completionToolCalls, firstChoice, type ReplyContext, type TokenUsage } from '../../dialects/types.js';
import { argumentsObject } from '../../tools.js';
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
function messageId(ctx: ReplyContext): string {
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

/**
 * A thinking block for reasoning another provider wrote. Its signature is empty: only
 * Anthropic signs thinking, and a block sent back to another model is left out anyway.
 */
const thinkingBlock = (thinking: string): Record<string, unknown> => ({ type: 'thinking', thinking, signature: '' });

/** A canonical chat.completion as an Anthropic message: the reasoning as a thinking block, the text, then a tool_use block per tool call. */
export function messageFromCompletion(completion: Record<string, unknown>, text: string, ctx: ReplyContext, u: TokenUsage, c: ChatCost): Record<string, unknown> {
  const choice = Array.isArray(completion.choices) ? (completion.choices[0] as { finish_reason?: unknown } | undefined) : undefined;
  const tools = completionToolCalls(completion).map((t) => ({ type: 'tool_use', id: t.id, name: t.function.name, input: argumentsObject(t.function.arguments) }));
  const reasoning = completionReasoning(completion);
  return {
    id: messageId(ctx), type: 'message', role: 'assistant', model: ctx.requestedModel,
    content: [...(reasoning ? [thinkingBlock(reasoning)] : []), ...(text ? [{ type: 'text', text }] : []), ...tools],
    stop_reason: stopReason(choice?.finish_reason), stop_sequence: null,
    usage: anthropicUsageObject(u, c),
  };
}

/** The Anthropic `event: error` frame for a stream that broke. */
export function errorFrame(body: unknown): string {
  return formatSse(JSON.stringify(body), 'error');
}

export interface AnthropicEncoder {
  /** Frames for one canonical chunk; `usage` is what the upstream reported so far (for message_start). */
  chunk(data: string, usage: TokenUsage | undefined): string[];
  /** The closing frames, with the billed usage and its cost in message_delta. */
  finish(usage: TokenUsage, cost: ChatCost): string[];
}

const event = (type: string, body: Record<string, unknown>): string => formatSse(JSON.stringify({ type, ...body }), type);

/**
 * Canonical chunks → Anthropic named events: message_start on the first; a thinking
 * block for reasoning (thinking_delta…); a text block
 * for the text (content_block_start, text_delta…); a tool_use block per tool call
 * (its arguments as input_json_delta pieces), each block stopped before the next
 * starts; at the end message_delta with the usage and cost, then message_stop.
 */
export function anthropicEncoder(ctx: ReplyContext): AnthropicEncoder {
  let started = false;
  let open: number | undefined;
  let blocks = 0;
  let textBlock: number | undefined;
  let thinkingAt: number | undefined;
  const toolBlocks = new Map<number, number>();
  let stop = 'end_turn';
  const start = (u: TokenUsage | undefined): string[] => {
    if (started) return [];
    started = true;
    const usage = u ? { ...anthropicUsageObject(u, undefined), output_tokens: 0 } : { input_tokens: 0, output_tokens: 0 };
    const message = { id: messageId(ctx), type: 'message', role: 'assistant', model: ctx.requestedModel, content: [], stop_reason: null, stop_sequence: null, usage };
    return [event('message_start', { message })];
  };
  const close = (): string[] => {
    if (open === undefined) return [];
    const index = open;
    open = undefined;
    return [event('content_block_stop', { index })];
  };
  const begin = (block: Record<string, unknown>): { frames: string[]; index: number } => {
    const frames = close();
    const index = blocks++;
    open = index;
    frames.push(event('content_block_start', { index, content_block: block }));
    return { frames, index };
  };
  return {
    chunk(data, usage) {
      const frames = start(usage);
      const choice = firstChoice(data);
      const thought = choice?.delta?.reasoning_content;
      if (thought) {
        if (thinkingAt === undefined || open !== thinkingAt) {
          const b = begin(thinkingBlock(''));
          frames.push(...b.frames);
          thinkingAt = b.index;
        }
        frames.push(event('content_block_delta', { index: thinkingAt, delta: { type: 'thinking_delta', thinking: thought } }));
      }
      const text = choice?.delta?.content;
      if (text) {
        if (textBlock === undefined || open !== textBlock) {
          const b = begin({ type: 'text', text: '' });
          frames.push(...b.frames);
          textBlock = b.index;
        }
        frames.push(event('content_block_delta', { index: textBlock, delta: { type: 'text_delta', text } }));
      }
      for (const call of choice?.delta?.tool_calls ?? []) {
        const k = call.index ?? 0;
        let index = toolBlocks.get(k);
        if (index === undefined) {
          const b = begin({ type: 'tool_use', id: call.id ?? '', name: call.function?.name ?? '', input: {} });
          frames.push(...b.frames);
          index = b.index;
          toolBlocks.set(k, index);
        }
        const args = call.function?.arguments;
        if (args) frames.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args } }));
      }
      if (choice?.finish_reason) stop = stopReason(choice.finish_reason);
      return frames;
    },
    finish(u, c) {
      const frames = [...start(u), ...close()];
      frames.push(event('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: anthropicUsageObject(u, c) }), event('message_stop', {}));
      return frames;
    },
  };
}
