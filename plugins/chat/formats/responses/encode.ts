import { formatSse, type GatewayError } from '../../../../src/sdk.js';
import { completionReasoning, completionToolCalls, firstChoice, type ReplyContext, type TokenUsage } from '../../dialects/types.js';
import { costFields, type ChatCost } from '../../metering.js';
import { itemId, responseId } from './ids.js';
import type { Item } from './parse.js';

/**
 * Responses API replies: the Response object, its usage with the gateway's cost
 * fields, and the canonical (chat) reply of any dialect as output items — non-streamed,
 * or as the Responses stream events (response.created … response.completed).
 */

/** Responses usage (input/output tokens with their details), plus the gateway's cost fields. */
export function responsesUsage(u: TokenUsage, c: ChatCost | undefined): Record<string, unknown> {
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
    output_tokens: u.completionTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: u.promptTokens + u.completionTokens,
    ...(c ? costFields(c) : {}),
  };
}

/**
 * A Response object for this request: the fields echoing the client's request
 * (defaults as OpenAI's), the gateway's id and the requested model.
 */
export function responseShell(ctx: ReplyContext, body: Item, store: boolean): Record<string, unknown> {
  const pick = <T>(k: string, fallback: T): unknown => (body[k] === undefined ? fallback : body[k]);
  return {
    id: responseId(ctx), object: 'response', created_at: ctx.created, status: 'in_progress', background: false, error: null, incomplete_details: null,
    instructions: pick('instructions', null), max_output_tokens: pick('max_output_tokens', null), max_tool_calls: null, model: ctx.requestedModel,
    output: [], parallel_tool_calls: pick('parallel_tool_calls', true), previous_response_id: pick('previous_response_id', null),
    reasoning: pick('reasoning', { effort: null, summary: null }), service_tier: 'default', store,
    temperature: pick('temperature', 1), text: pick('text', { format: { type: 'text' } }), tool_choice: pick('tool_choice', 'auto'),
    tools: pick('tools', []), top_logprobs: 0, top_p: pick('top_p', 1), truncation: 'disabled', usage: null, user: pick('user', null), metadata: pick('metadata', {}),
  };
}

/** The status a canonical finish reason gives a response. */
export function finishStatus(finish: unknown): { status: string; incomplete_details: unknown } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

const messageItem = (id: string, text: string, status: string): Item => ({
  type: 'message', id, status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});

/** Flat upstream function names → the namespace and name the client declared them under (Codex `namespace` tools). */
export type NamespacedNames = ReadonlyMap<string, { namespace: string; name: string }>;

/** A function_call item; a function of a namespace comes back under its namespace and own name, as Codex reads it. */
const callItem = (id: string, call: { id: string; name: string; arguments: string }, status: string, names?: NamespacedNames): Item => {
  const ns = names?.get(call.name);
  return { type: 'function_call', id, call_id: call.id, ...(ns ? { namespace: ns.namespace, name: ns.name } : { name: call.name }), arguments: call.arguments, status };
};

/** Reasoning another provider returned, as a Responses reasoning item with its text as the summary. */
const reasoningItem = (id: string, text: string): Item => ({ type: 'reasoning', id, summary: text ? [{ type: 'summary_text', text }] : [] });

/** A canonical chat.completion as Response output items: the reasoning as a reasoning item, the text as a message, each tool call as a function_call. */
export function outputFromCompletion(completion: Record<string, unknown>, text: string, ctx: ReplyContext, names?: NamespacedNames): Item[] {
  const calls = completionToolCalls(completion);
  const reasoning = completionReasoning(completion);
  const out: Item[] = reasoning ? [reasoningItem(itemId(ctx, 'reasoning', 0), reasoning)] : [];
  if (text || calls.length === 0) out.push(messageItem(itemId(ctx, 'message', out.length), text, 'completed'));
  for (const c of calls) out.push(callItem(itemId(ctx, 'function_call', out.length), { id: c.id, name: c.function.name, arguments: c.function.arguments }, 'completed', names));
  return out;
}

type Emit = (type: string, body: Record<string, unknown>) => string;

type ItemKind = 'text' | 'call' | 'reasoning';

/** The events that finish an output item: a message's text and part, a call's arguments, or a reasoning summary, then the item itself. */
function doneEvents(event: Emit, item: Item, index: number, kind: ItemKind): string[] {
  if (kind === 'reasoning') {
    const part = (item.summary as Item[])[0];
    return [
      event('response.reasoning_summary_text.done', { item_id: item.id, output_index: index, summary_index: 0, text: part?.text }),
      event('response.reasoning_summary_part.done', { item_id: item.id, output_index: index, summary_index: 0, part }),
      event('response.output_item.done', { output_index: index, item }),
    ];
  }
  if (kind === 'call') {
    return [
      event('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: item.arguments }),
      event('response.output_item.done', { output_index: index, item }),
    ];
  }
  const part = (item.content as Item[])[0];
  return [
    event('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: part?.text, logprobs: [] }),
    event('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part }),
    event('response.output_item.done', { output_index: index, item }),
  ];
}

export interface ResponsesEncoder {
  /** Frames for one canonical chunk (response.created first). */
  chunk(data: string): string[];
  /** The items still open closed, and the final response (without usage, which the caller adds). */
  close(): { frames: string[]; output: Item[]; finish: string | null };
  /** A named event with the next sequence number. */
  event(type: string, body: Record<string, unknown>): string;
  /** The `error` event of a stream that broke; it carries `error` too, so the openai SDKs raise. */
  fail(err: GatewayError, body: unknown): string;
}

/**
 * Canonical chunks → Responses events: response.created and response.in_progress
 * first; reasoning as a reasoning item (reasoning_summary_text.delta…); the text as a message item (output_item.added, content_part.added,
 * output_text.delta…); each tool call as a function_call item
 * (function_call_arguments.delta…); an item is done before the next one starts.
 */
export function responsesEncoder(ctx: ReplyContext, shell: Record<string, unknown>, names?: NamespacedNames): ResponsesEncoder {
  let seq = 0;
  let started = false;
  const output: Item[] = [];
  let open: { index: number; kind: ItemKind; text: string } | undefined;
  const calls = new Map<number, number>();
  let finish: string | null = null;
  const event: Emit = (type, body) => formatSse(JSON.stringify({ type, sequence_number: seq++, ...body }), type);
  const start = (): string[] => {
    if (started) return [];
    started = true;
    return [event('response.created', { response: shell }), event('response.in_progress', { response: shell })];
  };
  const closeOpen = (): string[] => {
    if (!open) return [];
    const { index, kind, text } = open;
    open = undefined;
    const id = String(output[index]?.id);
    output[index] = kind === 'text' ? messageItem(id, text, 'completed') : kind === 'reasoning' ? reasoningItem(id, text) : { ...output[index], status: 'completed' };
    return doneEvents(event, output[index] as Item, index, kind);
  };
  const text = (delta: string): string[] => {
    const frames: string[] = [];
    if (open?.kind !== 'text') {
      frames.push(...closeOpen());
      const index = output.length;
      const item = messageItem(itemId(ctx, 'message', index), '', 'in_progress');
      output.push({ ...item, content: [] });
      open = { index, kind: 'text', text: '' };
      frames.push(event('response.output_item.added', { output_index: index, item: output[index] }),
        event('response.content_part.added', { item_id: item.id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }));
    }
    const o = open as { index: number; text: string };
    o.text += delta;
    frames.push(event('response.output_text.delta', { item_id: output[o.index]?.id, output_index: o.index, content_index: 0, delta, logprobs: [] }));
    return frames;
  };
  const reasoning = (delta: string): string[] => {
    const frames: string[] = [];
    if (open?.kind !== 'reasoning') {
      frames.push(...closeOpen());
      const index = output.length;
      output.push(reasoningItem(itemId(ctx, 'reasoning', index), ''));
      open = { index, kind: 'reasoning', text: '' };
      frames.push(event('response.output_item.added', { output_index: index, item: output[index] }),
        event('response.reasoning_summary_part.added', { item_id: output[index]?.id, output_index: index, summary_index: 0, part: { type: 'summary_text', text: '' } }));
    }
    const o = open as { index: number; text: string };
    o.text += delta;
    frames.push(event('response.reasoning_summary_text.delta', { item_id: output[o.index]?.id, output_index: o.index, summary_index: 0, delta }));
    return frames;
  };
  const call = (k: number, id: string | undefined, name: string | undefined, args: string): string[] => {
    const frames: string[] = [];
    let index = calls.get(k);
    if (index === undefined) {
      frames.push(...closeOpen());
      index = output.length;
      calls.set(k, index);
      output.push(callItem(itemId(ctx, 'function_call', index), { id: id ?? '', name: name ?? '', arguments: '' }, 'in_progress', names));
      open = { index, kind: 'call', text: '' };
      frames.push(event('response.output_item.added', { output_index: index, item: output[index] }));
    }
    const item = output[index] as Item;
    if (args) {
      output[index] = { ...item, arguments: String(item.arguments) + args };
      frames.push(event('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: args }));
    }
    return frames;
  };
  return {
    event,
    chunk(data) {
      const frames = start();
      const choice = firstChoice(data);
      if (choice?.delta?.reasoning_content) frames.push(...reasoning(choice.delta.reasoning_content));
      if (choice?.delta?.content) frames.push(...text(choice.delta.content));
      for (const d of choice?.delta?.tool_calls ?? []) frames.push(...call(d.index ?? 0, d.id, d.function?.name, d.function?.arguments ?? ''));
      if (choice?.finish_reason) finish = choice.finish_reason;
      return frames;
    },
    close() {
      const frames = [...start(), ...closeOpen()];
      return { frames, output, finish };
    },
    fail(err, body) {
      return event('error', { code: err.code, message: err.message, param: err.extras.param ?? null, error: (body as { error?: unknown }).error ?? body });
    },
  };
}
