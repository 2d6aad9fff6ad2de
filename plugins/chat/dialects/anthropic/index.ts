import { estimateTokens } from '../../../../src/sdk.js';
import { toAnthropicThinking } from '../../reasoning.js';
import { contentText, isObject, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import { argumentsObject, functionDecls, nonFunctionTool, toolCallsOf, toolChoice, toolResultText, type ToolCall } from '../../tools.js';
import {
  cacheSplitUsage, chunkJson, completionObject, finishFrom, MALFORMED, NOTHING, parseStreamEvent, toolCallDelta,
  type CacheSplitUsage, type ChatDialect, type ReplyContext, type TokenUsage, type TranslatedEvent,
} from '../types.js';
import { mergedTurns, type Turn } from '../turns.js';

/** Anthropic `usage` (a message's, message_start's, message_delta's): its input_tokens exclude the cache reads and writes. */
const USAGE = { input: 'input_tokens', output: 'output_tokens', cacheRead: 'cache_read_input_tokens', cacheWrite: 'cache_creation_input_tokens' } as const;
export type AnthropicUsage = CacheSplitUsage<typeof USAGE>;
/** Anthropic usage in the gateway's terms. */
export const anthropicUsage = cacheSplitUsage(USAGE);

export const finishFromStopReason = finishFrom({
  end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length',
  model_context_window_exceeded: 'length', tool_use: 'tool_calls', refusal: 'content_filter',
});

/** OpenAI request fields with no Anthropic equivalent that change what the reply is. */
const REFUSED_FIELDS = ['functions', 'function_call', 'logprobs', 'top_logprobs', 'audio', 'prediction'];
const PART_TYPES = new Set(['text', 'image_url']);
/** Anthropic's web search server tool, which a translated web search becomes. */
const WEB_SEARCH_TOOL = 'web_search_20250305';

function unsupported(req: ChatRequest): Untranslatable | undefined {
  const b = req.body;
  const field = REFUSED_FIELDS.find((f) => b[f] !== undefined && b[f] !== null && b[f] !== false);
  if (field) return { param: field, message: `${field} cannot be translated for this model's provider (Anthropic Messages); use a model served by an OpenAI-compatible provider` };
  if (isObject(b.response_format) && b.response_format.type !== 'text') {
    return { param: 'response_format', message: `response_format ${String(b.response_format.type)} cannot be translated for this model's provider (Anthropic Messages has no JSON mode); use an OpenAI or Gemini model` };
  }
  if (typeof b.n === 'number' && b.n > 1) return { param: 'n', message: 'n > 1 is not available for this model' };
  const t = nonFunctionTool(b.tools);
  if (t >= 0) return { param: `tools[${t}]`, message: 'only function tools can be translated for this model\'s provider (Anthropic Messages)' };
  const j = b.messages.findIndex((m) => Array.isArray(m.content) && m.content.some((p) => isObject(p) && !PART_TYPES.has(String(p.type))));
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

type Block = Record<string, unknown>;

const asBlocks = (content: unknown): Block[] => (typeof content === 'string' ? (content ? [{ type: 'text', text: content }] : []) : (content as Block[]));

/** One message as an Anthropic turn: assistant tool calls → tool_use blocks, a tool message → a tool_result block in a user turn. */
function anthropicTurn(m: ChatMessage): Turn<'user' | 'assistant', unknown> | undefined {
  if (m.role === 'user') return { role: 'user', content: contentBlocks(m.content) };
  if (m.role === 'assistant') {
    const calls = toolCallsOf(m);
    const content = contentBlocks(m.content ?? '');
    return calls.length === 0 ? { role: 'assistant', content } : {
      role: 'assistant',
      content: [...asBlocks(content), ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name, input: argumentsObject(c.function.arguments) }))],
    };
  }
  if (m.role === 'tool') return { role: 'user', content: [{ type: 'tool_result', tool_use_id: String(m.tool_call_id ?? ''), content: toolResultText(m) }] };
  return undefined;
}

/** The conversation as Anthropic turns; a turn's content stays a string until another is merged into it. */
const anthropicTurns = (messages: readonly ChatMessage[]) => mergedTurns(messages, anthropicTurn, (a, b): Block[] => [...asBlocks(a), ...asBlocks(b)]);

/** `tools` and `tool_choice` in Anthropic's terms; parallel_tool_calls false → disable_parallel_tool_use. */
function anthropicTools(b: ChatRequest['body']): Record<string, unknown> {
  const decls = functionDecls(b.tools);
  // OpenAI's `web_search_options` (a client's web search tool, translated) → Anthropic's web search server tool.
  const search = isObject(b.web_search_options) ? [{ type: WEB_SEARCH_TOOL, name: 'web_search' }] : [];
  if (decls.length === 0 && search.length === 0) return {};
  const tools = [...decls.map((d) => ({ name: d.name, ...(d.description ? { description: d.description } : {}), input_schema: d.parameters ?? { type: 'object', properties: {} } })), ...search];
  const choice = toolChoice(b.tool_choice);
  const serial = b.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  let tc: Record<string, unknown> | undefined;
  if (choice?.mode === 'none') tc = { type: 'none' };
  else if (choice?.mode === 'required') tc = { type: 'any', ...serial };
  else if (choice?.mode === 'function') tc = { type: 'tool', name: choice.name, ...serial };
  else if (b.parallel_tool_calls === false) tc = { type: 'auto', ...serial };
  return { tools, ...(tc ? { tool_choice: tc } : {}) };
}

/** The canonical request as an Anthropic Messages body. max_tokens is passed only when the client set it. */
function toAnthropicBody(req: ChatRequest, upstreamModel: string): Record<string, unknown> {
  const b = req.body;
  const system = b.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop : undefined;
  const user = typeof b.user === 'string' ? b.user : undefined;
  const thinking = req.reasoning ? toAnthropicThinking(req.reasoning, req.maxTokens) : undefined;
  return {
    model: upstreamModel,
    ...(system.length > 0 ? { system: system.join('\n\n') } : {}),
    messages: anthropicTurns(b.messages),
    ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
    ...(stop ? { stop_sequences: stop } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(typeof b.top_p === 'number' ? { top_p: b.top_p } : {}),
    ...(user ? { metadata: { user_id: user } } : {}),
    ...anthropicTools(b),
    ...(thinking ? { thinking } : {}),
    ...(req.stream ? { stream: true } : {}),
  };
}

interface AnthropicMessage {
  content?: Array<{ type?: string; text?: string; thinking?: string; id?: string; name?: string; input?: unknown }>;
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

function fromAnthropicResponse(body: string, ctx: ReplyContext): { completion: Record<string, unknown>; usage: TokenUsage | undefined } {
  const msg = JSON.parse(body) as AnthropicMessage;
  if (typeof msg !== 'object' || msg === null || !Array.isArray(msg.content)) throw new Error('not an Anthropic message');
  const text = msg.content.filter((c) => c.type === 'text').map((c) => c.text ?? '').join('');
  const calls: ToolCall[] = msg.content.filter((c) => c.type === 'tool_use')
    .map((c) => ({ id: c.id ?? '', type: 'function', function: { name: c.name ?? '', arguments: JSON.stringify(c.input ?? {}) } }));
  const usage = anthropicUsage(msg.usage);
  const reasoning = msg.content.filter((c) => c.type === 'thinking').map((c) => c.thinking ?? '').join('');
  return { completion: completionObject(ctx, text, finishFromStopReason(msg.stop_reason), usage, calls, reasoning), usage };
}

interface StreamEvent {
  type?: string;
  index?: number;
  message?: { usage?: AnthropicUsage };
  content_block?: { type?: string; text?: string; id?: string; name?: string };
  delta?: { type?: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
  error?: { message?: string; type?: string };
}

/**
 * Anthropic named events (message_start … message_stop) → canonical chunks, one event
 * at a time: text deltas as content, thinking deltas as reasoning_content, each tool_use block as a tool call whose
 * input_json_delta pieces become argument deltas.
 */
function anthropicStream(ctx: ReplyContext): { onEvent(event: string | undefined, data: string): TranslatedEvent } {
  let usage: AnthropicUsage = {};
  /** Canonical tool-call index of each tool_use block, by block index. */
  const toolOfBlock = new Map<number, number>();
  const text = (t: string): TranslatedEvent => ({ chunks: [chunkJson(ctx, { content: t }, null)], deliveredTokens: estimateTokens(t), done: false });
  const delta = (d: Record<string, unknown>, tokens: number): TranslatedEvent => ({ chunks: [chunkJson(ctx, d, null)], deliveredTokens: tokens, done: false });
  return {
    onEvent(_event, data): TranslatedEvent {
      const ev = parseStreamEvent<StreamEvent>(data);
      if (!ev) return MALFORMED;
      switch (ev.type) {
        case 'message_start':
          usage = { ...ev.message?.usage };
          return { chunks: [chunkJson(ctx, { role: 'assistant', content: '' }, null)], usage: anthropicUsage(usage), deliveredTokens: 0, done: false };
        case 'content_block_start': {
          const block = ev.content_block;
          if (block?.type === 'tool_use') {
            const index = toolOfBlock.size;
            toolOfBlock.set(ev.index ?? index, index);
            return delta(toolCallDelta(index, { id: block.id ?? '', name: block.name ?? '', arguments: '' }), 1);
          }
          return block?.type === 'text' && block.text ? text(block.text) : NOTHING;
        }
        case 'content_block_delta': {
          const d = ev.delta;
          if (d?.type === 'input_json_delta' && d.partial_json) {
            const index = toolOfBlock.get(ev.index ?? -1);
            return index === undefined ? NOTHING : delta(toolCallDelta(index, { arguments: d.partial_json }), estimateTokens(d.partial_json));
          }
          // Thinking arrives as thinking_delta pieces (its signature_delta is Anthropic's own and stays there).
          if (d?.type === 'thinking_delta' && d.thinking) return delta({ reasoning_content: d.thinking }, estimateTokens(d.thinking));
          return d?.type === 'text_delta' && d.text ? text(d.text) : NOTHING;
        }
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
 * The Messages API as the clouds host it (Vertex AI's rawPredict, Bedrock's InvokeModel):
 * the version in the body (`anthropic_version`, from the endpoint's dialect_options) and
 * the model in the path, so the body has no `model`. Without the option, the body as is.
 */
function withBodyVersion(body: Record<string, unknown>, options: Readonly<Record<string, string>> | undefined): Record<string, unknown> {
  const version = options?.anthropic_version;
  if (!version) return body;
  const { model: _inPath, ...rest } = body;
  return { anthropic_version: version, ...rest };
}

/**
 * Anthropic Messages (`POST /v1/messages`). A request that arrived on our own
 * /v1/messages goes upstream as the client wrote it (only the model id replaced, the
 * client's anthropic-version/beta headers kept); a canonical one is translated.
 * dialect_options: `anthropic_version` (see withBodyVersion), `action` and
 * `stream_action` (the path's `{action}` for a reply and a stream, e.g. rawPredict).
 */
export const anthropicDialect: ChatDialect = {
  name: 'anthropic-messages',
  unsupported,
  requestBody(req, upstreamModel, opts) {
    const body = req.native?.format === 'anthropic' ? { ...req.native.body, model: upstreamModel } : toAnthropicBody(req, upstreamModel);
    return JSON.stringify(withBodyVersion(body, opts?.dialectOptions));
  },
  pathVars: (req, upstreamModel, opts) => {
    const o = opts?.dialectOptions ?? {};
    const action = req.stream ? (o.stream_action ?? o.action) : o.action;
    return { model: upstreamModel, ...(action ? { action } : {}) };
  },
  headers: (req, opts) => {
    if (req.native?.format !== 'anthropic') return {};
    if (!opts?.dialectOptions?.anthropic_version) return req.native.headers;
    // The version travels in the body there: a client's anthropic-version header would contradict it.
    return Object.fromEntries(Object.entries(req.native.headers).filter(([k]) => k.toLowerCase() !== 'anthropic-version'));
  },
  response: fromAnthropicResponse,
  streamTranslator: anthropicStream,
};
