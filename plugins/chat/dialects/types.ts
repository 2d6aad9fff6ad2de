import { reportedTokens } from '../../../src/sdk.js';
import type { ChatRequest, Untranslatable } from '../request.js';
import type { ToolCall } from '../tools.js';

/** Token counts as a provider reports them, in the gateway's terms. */
export interface TokenUsage {
  /** Every prompt token, cached or not. */
  promptTokens: number;
  /** Every generated token, reasoning included. */
  completionTokens: number;
  /** Prompt tokens served from the provider's cache (priced as input_cache_read). */
  cachedTokens?: number;
  /** Prompt tokens written to the provider's cache (priced as input_cache_write). */
  cacheWriteTokens?: number;
  /** Completion tokens spent reasoning (part of completionTokens, priced as output), when the provider says. */
  reasoningTokens?: number;
}

/** The names of a usage whose input count excludes the cache reads and writes (Anthropic's, Bedrock Converse's). */
interface CacheSplitFields<K extends string> {
  input: K;
  output: K;
  cacheRead: K;
  cacheWrite: K;
}

/** Such a usage as the upstream writes it: its four counts by those names, any of them absent or null. */
export type CacheSplitUsage<F extends CacheSplitFields<string>> = Partial<Record<F[keyof CacheSplitFields<string>], number | null>>;

/**
 * The reader of such a usage, in the gateway's terms: the prompt count includes the cache
 * reads and writes, which are priced apart; undefined without an input count, and a count
 * that is not one throws InvalidUsage (naming `usage.<field>`).
 */
export function cacheSplitUsage<K extends string>(fields: CacheSplitFields<K>): (u: Partial<Record<K, number | null>> | null | undefined) => TokenUsage | undefined {
  const { input, output, cacheRead, cacheWrite } = fields;
  return (u) => {
    const prompt = reportedTokens(u?.[input], `usage.${input}`);
    if (!u || prompt === undefined) return undefined;
    const read = reportedTokens(u[cacheRead], `usage.${cacheRead}`) ?? 0;
    const write = reportedTokens(u[cacheWrite], `usage.${cacheWrite}`) ?? 0;
    const completion = reportedTokens(u[output], `usage.${output}`) ?? 0;
    return { promptTokens: prompt + read + write, completionTokens: completion, cachedTokens: read, cacheWriteTokens: write };
  };
}

/** What a translation needs to know about the upstream model beyond its id (from provider YAML). */
export interface UpstreamOptions {
  /** Where an OpenAI-dialect upstream takes the output limit (reasoning models: max_completion_tokens). */
  maxTokensParam?: 'max_tokens' | 'max_completion_tokens';
  /** The model reasons (YAML `capabilities.reasoning`): a translated request's reasoning is sent to it. */
  reasoning?: boolean;
  /** The endpoint's `dialect_options` (YAML), e.g. the Anthropic body version of a cloud's Claude. */
  dialectOptions?: Readonly<Record<string, string>>;
}

/** What one upstream stream event becomes in the canonical (OpenAI chunk) format. */
export interface TranslatedEvent {
  /** `data:` payloads in OpenAI chunk format, already serialised. */
  chunks: string[];
  /** Usage so far, when this event carried it (cumulative counts). */
  usage?: TokenUsage;
  /** The upstream's own OpenAI-format usage chunk (`choices: []`), without the gateway's cost fields. */
  usageChunk?: Record<string, unknown>;
  /** Completion tokens delivered by the chunks of this event (for billing a stream cut short). */
  deliveredTokens: number;
  /** True when the upstream signalled the end of the reply. */
  done: boolean;
  /** An upstream error inside the stream. */
  error?: string;
}

export interface StreamTranslator {
  onEvent(event: string | undefined, data: string): TranslatedEvent;
}

/** One upstream stream event as a stream translator reads it: its name and its (JSON) data. */
export interface UpstreamEvent {
  event: string | undefined;
  data: string;
}

/**
 * Splits a stream's bytes into events, for a dialect whose stream is not SSE (Bedrock's
 * AWS event-stream framing); one per stream. May throw on a corrupt frame (the stream
 * then ends with an error event).
 */
export interface EventDecoder {
  push(chunk: Uint8Array): UpstreamEvent[];
  /** The body's end: anything left is an incomplete frame. */
  end(): UpstreamEvent[];
}

/** Values a translation needs that are not in the request: ids and time are the caller's (dialects stay pure). */
export interface ReplyContext {
  /** The model id as the client asked for it; replies carry it. */
  requestedModel: string;
  /** `chatcmpl-…` id for replies whose upstream id is not in OpenAI form. */
  id: string;
  /** Unix seconds. */
  created: number;
}

/** A non-streamed upstream reply in canonical form. */
export interface TranslatedResponse {
  /** An OpenAI `chat.completion` object (its `usage` is the upstream's, without cost). */
  completion: Record<string, unknown>;
  usage: TokenUsage | undefined;
}

/**
 * A chat dialect: pure translation between the canonical OpenAI chat format and one
 * upstream wire format, chosen by name from provider YAML (`dialect:`). No I/O, no
 * clock, no mutation of inputs; table-driven tests sit beside each one.
 */
export interface ChatDialect {
  readonly name: string;
  /** A request feature this dialect cannot translate (refused with 400 before any call), or undefined. */
  unsupported?(req: ChatRequest): Untranslatable | undefined;
  /** The upstream body for a request, with the provider's model id. */
  requestBody(req: ChatRequest, upstreamModel: string, opts?: UpstreamOptions): string;
  /** Variables for the endpoint's path template (`{model}`, `{action}`). */
  pathVars(req: ChatRequest, upstreamModel: string, opts?: UpstreamOptions): Record<string, string>;
  /** Query parameters the upstream needs for this request (e.g. Gemini's `alt=sse` on streams). */
  query?(req: ChatRequest): Record<string, string>;
  /** Request headers this request carries upstream (e.g. a client's own API version). */
  headers?(req: ChatRequest, opts?: UpstreamOptions): Record<string, string>;
  /** A non-streamed upstream body (2xx) in canonical form; throws on a malformed body. */
  response(body: string, ctx: ReplyContext): TranslatedResponse;
  streamTranslator(ctx: ReplyContext): StreamTranslator;
  /** The decoder of a stream that is not SSE (server-sent events when absent). */
  eventDecoder?(): EventDecoder;
}

/** A stream event that carries nothing for the client. */
export const NOTHING: TranslatedEvent = Object.freeze({ chunks: Object.freeze([]) as unknown as string[], deliveredTokens: 0, done: false });

/** What a stream reports for an event whose data is not a JSON object: the stream ends with an error. */
export const MALFORMED_EVENT = 'the upstream sent a malformed stream event';

/** The translation of a malformed stream event. */
export const MALFORMED: TranslatedEvent = Object.freeze({ ...NOTHING, error: MALFORMED_EVENT });

/**
 * The JSON object in one upstream stream event's `data:`, or undefined when the data
 * does not parse or is not an object: the preamble every stream translator shares.
 * The shape is the caller's declaration of what it reads; fields stay optional.
 */
export function parseStreamEvent<T extends object>(data: string): T | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as T) : undefined;
}

/** OpenAI finish reasons for the canonical form. */
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls';

/** The reader of a dialect's stop reasons by its table: an absent or unknown one is `stop`. */
export function finishFrom(reasons: Readonly<Record<string, FinishReason>>): (reason: unknown) => FinishReason {
  // Own keys only: a stop reason such as "constructor" would otherwise find an inherited function.
  return (reason) => (typeof reason === 'string' && Object.hasOwn(reasons, reason) ? reasons[reason] : undefined) ?? 'stop';
}

/** A tool-call piece in a canonical stream delta: the first for a call has its id and name. */
export interface ToolCallPiece { index?: number; id?: string; function?: { name?: string; arguments?: string } }

/** The first choice of a serialised canonical chunk, as client-format encoders read it. */
export interface ChunkChoice {
  index?: number;
  /** `reasoning_content`: the model's reasoning text (thinking, thought summaries), as DeepSeek and LiteLLM name it. */
  delta?: { content?: string | null; reasoning_content?: string | null; tool_calls?: ToolCallPiece[] };
  finish_reason?: string | null;
}

/** The choice of index 0 in a serialised canonical chunk (chunks the gateway reads are its own or an OpenAI upstream's). */
export function firstChoice(data: string): ChunkChoice | undefined {
  return (JSON.parse(data) as { choices?: ChunkChoice[] }).choices?.find((c) => (c.index ?? 0) === 0);
}

/** One canonical stream chunk with a single choice, serialised. */
export function chunkJson(ctx: ReplyContext, delta: Record<string, unknown>, finish: FinishReason | null): string {
  return JSON.stringify({
    id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.requestedModel,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
}

/** A canonical `chat.completion` with one choice: text, its reasoning when there is any, and, when the model called tools, its calls. */
export function completionObject(ctx: ReplyContext, text: string, finish: FinishReason, usage: TokenUsage | undefined, toolCalls: ToolCall[] = [], reasoning = ''): Record<string, unknown> {
  const thought = reasoning ? { reasoning_content: reasoning } : {};
  const message = toolCalls.length > 0
    ? { role: 'assistant', content: text || null, ...thought, refusal: null, tool_calls: toolCalls }
    : { role: 'assistant', content: text, ...thought, refusal: null };
  return {
    id: ctx.id, object: 'chat.completion', created: ctx.created, model: ctx.requestedModel,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    ...(usage ? { usage: openaiUsageObject(usage) } : {}),
  };
}

/** Ids for tool calls a provider did not name (Gemini): unique in the reply, stable for its stream. */
export function callId(ctx: ReplyContext, index: number): string {
  return `call_${ctx.id.replace(/^chatcmpl-/, '')}_${index}`;
}

/** A canonical stream delta that starts tool call `index` (its whole arguments, or the first piece). */
export function toolCallDelta(index: number, call: { id?: string; name?: string; arguments: string }): Record<string, unknown> {
  const fn = call.name === undefined ? { arguments: call.arguments } : { name: call.name, arguments: call.arguments };
  return { tool_calls: [{ index, ...(call.id ? { id: call.id, type: 'function' } : {}), function: fn }] };
}

/** The tool calls of a canonical completion's first choice. */
export function completionToolCalls(completion: Record<string, unknown>): ToolCall[] {
  const choices = Array.isArray(completion.choices) ? (completion.choices as Array<{ message?: { tool_calls?: unknown } }>) : [];
  const calls = choices[0]?.message?.tool_calls;
  return Array.isArray(calls) ? (calls as ToolCall[]) : [];
}

/** The reasoning text of a canonical completion's first choice (`reasoning_content`), or ''. */
export function completionReasoning(completion: Record<string, unknown>): string {
  const choices = Array.isArray(completion.choices) ? (completion.choices as Array<{ message?: { reasoning_content?: unknown } }>) : [];
  const r = choices[0]?.message?.reasoning_content;
  return typeof r === 'string' ? r : '';
}

/** The text of a canonical completion's choices. */
export function completionText(completion: Record<string, unknown>): string {
  const choices = Array.isArray(completion.choices) ? (completion.choices as Array<{ message?: { content?: unknown } }>) : [];
  return choices.map((c) => (typeof c.message?.content === 'string' ? c.message.content : '')).join('');
}

/** Token usage in OpenAI's shape (without the gateway's cost fields). */
function openaiUsageObject(u: TokenUsage): Record<string, unknown> {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
    ...(u.reasoningTokens ? { completion_tokens_details: { reasoning_tokens: u.reasoningTokens } } : {}),
  };
}
