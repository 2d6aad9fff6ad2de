import { estimateTokens, reportedTokens } from '../../../../src/sdk.js';
import { contentText, isObject, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import {
  chunkJson, completionObject, MALFORMED, NOTHING, parseStreamEvent,
  type ChatDialect, type FinishReason, type ReplyContext, type TokenUsage, type TranslatedEvent,
} from '../types.js';

/** Anthropic `usage`, as in a message, message_start and message_delta. */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/**
 * Anthropic usage in the gateway's terms. Anthropic's input_tokens exclude the cache
 * reads and writes, which are priced apart; the gateway's prompt count includes them.
 */
export function anthropicUsage(u: AnthropicUsage | null | undefined): TokenUsage | undefined {
  const input = reportedTokens(u?.input_tokens, 'usage.input_tokens');
  if (!u || input === undefined) return undefined;
  const read = reportedTokens(u.cache_read_input_tokens, 'usage.cache_read_input_tokens') ?? 0;
  const write = reportedTokens(u.cache_creation_input_tokens, 'usage.cache_creation_input_tokens') ?? 0;
  const output = reportedTokens(u.output_tokens, 'usage.output_tokens') ?? 0;
  return { promptTokens: input + read + write, completionTokens: output, cachedTokens: read, cacheWriteTokens: write };
}

const STOP_REASONS: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length',
  model_context_window_exceeded: 'length', tool_use: 'tool_calls', refusal: 'content_filter',
};

export function finishFromStopReason(reason: unknown): FinishReason {
  return (typeof reason === 'string' ? STOP_REASONS[reason] : undefined) ?? 'stop';
}

/** OpenAI request fields with no Anthropic equivalent that change what the reply is. */
const REFUSED_FIELDS = ['tools', 'tool_choice', 'functions', 'function_call', 'response_format', 'logprobs', 'audio', 'prediction'];

function unsupported(req: ChatRequest): Untranslatable | undefined {
  const b = req.body;
  const field = REFUSED_FIELDS.find((f) => b[f] !== undefined && b[f] !== null && b[f] !== false);
  if (field) return { param: field, message: `${field} cannot be translated for this model's provider (Anthropic Messages); use a model served by an OpenAI-compatible provider` };
  if (typeof b.n === 'number' && b.n > 1) return { param: 'n', message: 'n > 1 is not available for this model' };
  const i = b.messages.findIndex((m) => m.role === 'tool' || m.role === 'function' || m.tool_calls !== undefined);
  if (i >= 0) return { param: `messages[${i}]`, message: 'tool messages cannot be translated for this model\'s provider (Anthropic Messages)' };
  const j = b.messages.findIndex((m) => Array.isArray(m.content) && m.content.some((p) => isObject(p) && p.type !== 'text' && p.type !== 'image_url'));
  if (j >= 0) return { param: `messages[${j}].content`, message: 'only text and image parts can be translated for this model\'s provider' };
  return undefined;
}

/** An OpenAI `image_url` part as an Anthropic image block (data URL → base64, else URL source). */
function imageBlock(part: Record<string, unknown>): Record<string, unknown> {
  const url = isObject(part.image_url) && typeof part.image_url.url === 'string' ? part.image_url.url : '';
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return m ? { type: 'image', source: { type: 'base64', media_type: m[1], data: m[2] } } : { type: 'image', source: { type: 'url', url } };
}

function contentBlocks(content: unknown): unknown {
  if (!Array.isArray(content)) return typeof content === 'string' ? content : '';
  return content.filter(isObject).map((p) => (p.type === 'image_url' ? imageBlock(p) : { type: 'text', text: String(p.text ?? '') }));
}

/** The canonical request as an Anthropic Messages body. max_tokens is passed only when the client set it. */
export function toAnthropicBody(req: ChatRequest, upstreamModel: string): Record<string, unknown> {
  const b = req.body;
  const system = b.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content));
  const messages = b.messages.filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m: ChatMessage) => ({ role: m.role, content: contentBlocks(m.content) }));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop : undefined;
  const user = typeof b.user === 'string' ? b.user : undefined;
  return {
    model: upstreamModel,
    ...(system.length > 0 ? { system: system.join('\n\n') } : {}),
    messages,
    ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
    ...(stop ? { stop_sequences: stop } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(typeof b.top_p === 'number' ? { top_p: b.top_p } : {}),
    ...(user ? { metadata: { user_id: user } } : {}),
    ...(req.stream ? { stream: true } : {}),
  };
}

interface AnthropicMessage {
  content?: Array<{ type?: string; text?: string }>;
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

function fromAnthropicResponse(body: string, ctx: ReplyContext): { completion: Record<string, unknown>; usage: TokenUsage | undefined } {
  const msg = JSON.parse(body) as AnthropicMessage;
  if (typeof msg !== 'object' || msg === null || !Array.isArray(msg.content)) throw new Error('not an Anthropic message');
  const text = msg.content.filter((c) => c.type === 'text').map((c) => c.text ?? '').join('');
  const usage = anthropicUsage(msg.usage);
  return { completion: completionObject(ctx, text, finishFromStopReason(msg.stop_reason), usage), usage };
}

interface StreamEvent {
  type?: string;
  message?: { usage?: AnthropicUsage };
  content_block?: { type?: string; text?: string };
  delta?: { type?: string; text?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
  error?: { message?: string; type?: string };
}

/** Anthropic named events (message_start … message_stop) → canonical chunks, one event at a time. */
function anthropicStream(ctx: ReplyContext): { onEvent(event: string | undefined, data: string): TranslatedEvent } {
  let usage: AnthropicUsage = {};
  const text = (t: string): TranslatedEvent => ({ chunks: [chunkJson(ctx, { content: t }, null)], deliveredTokens: estimateTokens(t), done: false });
  return {
    onEvent(_event, data): TranslatedEvent {
      const ev = parseStreamEvent<StreamEvent>(data);
      if (!ev) return MALFORMED;
      switch (ev.type) {
        case 'message_start':
          usage = { ...ev.message?.usage };
          return { chunks: [chunkJson(ctx, { role: 'assistant', content: '' }, null)], usage: anthropicUsage(usage), deliveredTokens: 0, done: false };
        case 'content_block_start':
          return ev.content_block?.type === 'text' && ev.content_block.text ? text(ev.content_block.text) : NOTHING;
        case 'content_block_delta':
          return ev.delta?.type === 'text_delta' && ev.delta.text ? text(ev.delta.text) : NOTHING;
        case 'message_delta': {
          // message_delta counts are cumulative; absent ones keep their message_start value.
          const given = Object.fromEntries(Object.entries(ev.usage ?? {}).filter(([, v]) => typeof v === 'number'));
          usage = { ...usage, ...given };
          const chunk = chunkJson(ctx, {}, finishFromStopReason(ev.delta?.stop_reason));
          return { chunks: [chunk], usage: anthropicUsage(usage), deliveredTokens: 0, done: false };
        }
        case 'message_stop':
          return { ...NOTHING, done: true };
        case 'error':
          return { ...NOTHING, error: ev.error?.message ?? 'upstream error' };
        default:
          return NOTHING; // ping, content_block_stop, and event types added later
      }
    },
  };
}

/**
 * Anthropic Messages (`POST /v1/messages`). A request that arrived on our own
 * /v1/messages goes upstream as the client wrote it (only the model id replaced, the
 * client's anthropic-version/beta headers kept); a canonical one is translated.
 */
export const anthropicDialect: ChatDialect = {
  name: 'anthropic-messages',
  unsupported,
  requestBody(req, upstreamModel) {
    if (req.native?.format === 'anthropic') return JSON.stringify({ ...req.native.body, model: upstreamModel });
    return JSON.stringify(toAnthropicBody(req, upstreamModel));
  },
  pathVars: (_req, upstreamModel) => ({ model: upstreamModel }),
  headers: (req) => (req.native?.format === 'anthropic' ? req.native.headers : {}),
  response: fromAnthropicResponse,
  streamTranslator: anthropicStream,
};
