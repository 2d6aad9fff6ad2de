import type { IncomingHttpHeaders } from 'node:http';
import { invalidField } from '../../../../src/sdk.js';
import { fromAnthropic } from '../../reasoning.js';
import { isObject, promptText, promptTokenBound, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import type { UnsupportedParam } from '../../unsupported.js';

/** Client headers that steer an Anthropic request; forwarded when the provider speaks Anthropic Messages. */
const FORWARDED_HEADERS = ['anthropic-version', 'anthropic-beta'];

/** Request fields with no canonical (OpenAI chat) equivalent that change what the reply is: refused off Claude, whatever the policy. */
const NATIVE_ONLY_FIELDS = ['mcp_servers', 'container', 'output_format'];
/** Request fields the `unsupported_params` policy decides on (carried by the reasoning translations, reasoning.ts, under `translate`). */
const POLICY_FIELDS = ['thinking', 'output_config'];
/**
 * Content blocks the canonical form carries (tool_use → tool_calls, tool_result → tool
 * messages); earlier thinking blocks are context another model cannot use, and are left out.
 */
const TRANSLATED_BLOCKS = new Set(['text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']);

/**
 * Validates an Anthropic Messages request (`POST /v1/messages`) and gives it in
 * canonical form too, so any chat model can serve it. Every failure names its field
 * (400). `max_tokens` is optional here: a provider that needs it refuses the request
 * itself, and that refusal reaches the client (spec §7).
 */
export function parseMessagesRequest(body: unknown, headers: IncomingHttpHeaders, text?: string): ChatRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const { model, messages, system, stream } = body;
  if (typeof model !== 'string' || model.length === 0) throw invalidField('model', 'model is required and must be a non-empty string');
  if (!Array.isArray(messages) || messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array');
  messages.forEach((m, i) => { validateMessage(m, i); });
  validateSystem(system);
  if (stream !== undefined && typeof stream !== 'boolean') throw invalidField('stream', 'stream must be a boolean');
  const maxTokens = optionalMaxTokens(body.max_tokens);
  const stop = body.stop_sequences;
  if (stop !== undefined && !(Array.isArray(stop) && stop.every((s) => typeof s === 'string'))) throw invalidField('stop_sequences', 'stop_sequences must be an array of strings');
  for (const f of ['temperature', 'top_p', 'top_k']) {
    if (body[f] !== undefined && typeof body[f] !== 'number') throw invalidField(f, `${f} must be a number`);
  }
  const typed = messages as Array<{ role: string; content: unknown }>;
  const systemText = typeof system === 'string' ? system : Array.isArray(system) ? promptText([system]) : '';
  return {
    model,
    body: canonicalBody(body, typed, systemText, maxTokens),
    stream: stream === true,
    includeUsage: false,
    maxTokens,
    prompt: promptText([systemText, ...typed.map((m) => m.content)]),
    promptBound: promptTokenBound([system ?? null, messages], body.tools ?? null, text),
    native: { format: 'anthropic', body, headers: forwardedHeaders(headers) },
    ...reasoningOf(body),
    untranslatable: untranslatable(body, typed),
    unsupported: unsupportedParams(body, typed),
  };
}

function validateMessage(m: unknown, i: number): void {
  const param = `messages[${i}]`;
  if (!isObject(m)) throw invalidField(param, `${param} must be an object with role and content`);
  if (m.role !== 'user' && m.role !== 'assistant' && m.role !== 'system') throw invalidField(`${param}.role`, `${param}.role must be "user", "assistant" or "system"`);
  if (m.role === 'system') {
    validateSystemMessage(m, param);
    return;
  }
  if (typeof m.content === 'string') return;
  if (!Array.isArray(m.content)) throw invalidField(`${param}.content`, `${param}.content must be a string or an array of content blocks`);
  m.content.forEach((block, j) => { validateBlock(block, `${param}.content[${j}]`); });
}

/**
 * A mid-conversation system message (Claude Code sends them): text only, as a string or
 * text blocks. Anthropic's beta `clear_at` and `output_config` travel only to Claude.
 */
function validateSystemMessage(m: Record<string, unknown>, param: string): void {
  const c = m.content;
  if (typeof c === 'string' || (c === undefined && isObject(m.output_config))) return;
  if (!Array.isArray(c)) throw invalidField(`${param}.content`, `${param}.content must be a string or an array of text blocks`);
  c.forEach((b, j) => {
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string') throw invalidField(`${param}.content[${j}]`, `${param}.content[${j}] must be a text block (a system message holds text only)`);
  });
}

function validateBlock(block: unknown, param: string): void {
  if (!isObject(block) || typeof block.type !== 'string') throw invalidField(param, `${param} must be a content block with a type`);
  if (block.type === 'text' && typeof block.text !== 'string') throw invalidField(`${param}.text`, 'a text block needs a string text');
  if (block.type === 'image' && !isObject(block.source)) throw invalidField(`${param}.source`, 'an image block needs a source object');
}

function validateSystem(system: unknown): void {
  if (system === undefined || typeof system === 'string') return;
  if (!Array.isArray(system)) throw invalidField('system', 'system must be a string or an array of text blocks');
  system.forEach((b, i) => {
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string') throw invalidField(`system[${i}]`, `system[${i}] must be a text block`);
  });
}

function optionalMaxTokens(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalidField('max_tokens', 'max_tokens must be an integer of at least 1');
  return v;
}

function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const v = headers[name];
    if (typeof v === 'string' && v.length > 0) out[name] = v;
  }
  return out;
}

/** `thinking` and `output_config.effort`, translated for other providers (reasoning.ts). */
function reasoningOf(body: Record<string, unknown>): Pick<ChatRequest, 'reasoning'> {
  if (body.thinking !== undefined && body.thinking !== null && !(isObject(body.thinking) && ['enabled', 'adaptive', 'disabled'].includes(String(body.thinking.type)))) {
    throw invalidField('thinking.type', 'thinking.type must be "enabled", "adaptive" or "disabled"');
  }
  const reasoning = fromAnthropic(body.thinking, body.output_config);
  return reasoning ? { reasoning } : {};
}

const WHY_NATIVE = 'can only be served by a model whose provider speaks Anthropic Messages';

/** What the canonical form cannot carry and no policy may drop: such a request is served only by an Anthropic-dialect provider. */
function untranslatable(body: Record<string, unknown>, messages: Array<{ content: unknown }>): Untranslatable | undefined {
  const field = NATIVE_ONLY_FIELDS.find((f) => body[f] !== undefined && body[f] !== null);
  if (field) return { param: field, message: `${field} ${WHY_NATIVE}` };
  // output_config's effort translates (reasoning.ts); anything else in it (a format) does not.
  const oc = isObject(body.output_config) ? Object.keys(body.output_config).find((k) => k !== 'effort') : body.output_config != null ? '' : undefined;
  if (oc !== undefined) return { param: oc ? `output_config.${oc}` : 'output_config', message: `output_config ${oc ? `${oc} ` : ''}${WHY_NATIVE}` };
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const [j, b] of m.content.entries()) {
      const type = isObject(b) ? String(b.type) : '';
      if (!TRANSLATED_BLOCKS.has(type)) return { param: `messages[${i}].content[${j}]`, message: `${type} blocks ${WHY_NATIVE}` };
      if (type === 'tool_result' && Array.isArray((b as { content?: unknown }).content) && ((b as { content: unknown[] }).content).some((c) => !isObject(c) || c.type !== 'text')) {
        return { param: `messages[${i}].content[${j}].content`, message: `tool results other than text ${WHY_NATIVE}` };
      }
    }
  }
  return undefined;
}

const isWebSearch = (type: string): boolean => type.startsWith('web_search');

/** The first `cache_control` hint (top level, on a system, message, nested tool result or tool block), as a path. */
function cacheControlPath(body: Record<string, unknown>, messages: Array<{ content: unknown }>): string | undefined {
  if (body.cache_control !== undefined) return 'cache_control';
  const inBlocks = (blocks: unknown, at: string): string | undefined => {
    if (!Array.isArray(blocks)) return undefined;
    for (const [j, b] of blocks.entries()) {
      if (isObject(b) && b.cache_control !== undefined) return `${at}[${j}].cache_control`;
      const nested = isObject(b) ? inBlocks(b.content, `${at}[${j}].content`) : undefined;
      if (nested) return nested;
    }
    return undefined;
  };
  return inBlocks(body.system, 'system') ?? messages.map((m, i) => inBlocks(m.content, `messages[${i}].content`)).find((p) => p !== undefined) ?? inBlocks(body.tools, 'tools');
}

/**
 * Parameters of a Messages request the canonical form does not carry, for the route's
 * `unsupported_params` policy: `thinking` and `output_config` (also on a system message),
 * server tools (a web search becomes the provider's own search where it has one), and
 * `cache_control` hints (prompt caching is Anthropic's; other providers cache by themselves).
 */
function unsupportedParams(body: Record<string, unknown>, messages: Array<{ content: unknown }>): UnsupportedParam[] {
  const out: UnsupportedParam[] = [];
  for (const f of POLICY_FIELDS) {
    const v = body[f];
    if (v === undefined || v === null || (f === 'thinking' && isObject(v) && v.type === 'disabled')) continue;
    out.push({ param: f, name: f, kind: f, message: `${f} ${WHY_NATIVE}`, value: v });
  }
  for (const [i, m] of messages.entries()) {
    const oc = (m as { output_config?: unknown }).output_config;
    if (isObject(oc) && Object.keys(oc).length > 0) out.push({ param: `messages[${i}].output_config`, name: 'output_config', kind: 'output_config', message: `output_config on a system message ${WHY_NATIVE}`, value: oc });
  }
  // Server tools (web search, code execution, computer use…) run at Anthropic; only client tools translate.
  (Array.isArray(body.tools) ? body.tools : []).forEach((t, i) => {
    if (isObject(t) && (t.type === undefined || t.type === 'custom')) return;
    const type = isObject(t) ? String(t.type) : 'tool';
    out.push({ param: `tools[${i}]`, name: type, kind: isWebSearch(type) ? 'web_search' : 'server_tool', message: `server tools ${WHY_NATIVE}`, value: t });
  });
  const cache = cacheControlPath(body, messages);
  if (cache) out.push({ param: cache, name: 'cache_control', kind: 'cache_control', message: `cache_control ${WHY_NATIVE}`, value: undefined });
  return out;
}

/** An Anthropic image block as an OpenAI image part (base64 → data URL). */
function imagePart(b: Record<string, unknown>): Record<string, unknown> {
  const s = isObject(b.source) ? b.source : {};
  const url = s.type === 'base64' ? `data:${String(s.media_type)};base64,${String(s.data)}` : String(s.url ?? '');
  return { type: 'image_url', image_url: { url } };
}

/** One Anthropic message as canonical messages: tool results first (one tool message each), then the rest; tool_use → tool_calls. */
function canonicalMessages(m: { role: string; content: unknown }): ChatMessage[] {
  if (!Array.isArray(m.content)) return [{ role: m.role, content: m.content }];
  const blocks = m.content.filter(isObject);
  const results: ChatMessage[] = blocks.filter((b) => b.type === 'tool_result')
    .map((b) => ({ role: 'tool', tool_call_id: String(b.tool_use_id ?? ''), content: typeof b.content === 'string' ? b.content : promptText([b.content ?? '']) }));
  const calls = blocks.filter((b) => b.type === 'tool_use')
    .map((b) => ({ id: String(b.id ?? ''), type: 'function', function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) } }));
  const parts = blocks.filter((b) => b.type === 'text' || b.type === 'image')
    .map((b) => (b.type === 'image' ? imagePart(b) : { type: 'text', text: typeof b.text === 'string' ? b.text : '' }));
  if (calls.length > 0) return [...results, { role: 'assistant', content: promptText([parts]) || null, tool_calls: calls }];
  return parts.length > 0 || results.length === 0 ? [...results, { role: m.role, content: parts }] : results;
}

/** Anthropic `tools` / `tool_choice` as OpenAI function tools, tool_choice and parallel_tool_calls. */
function canonicalTools(body: Record<string, unknown>): Record<string, unknown> {
  // Server tools are not functions: the unsupported_params policy decides on them (unsupportedParams).
  const clientTools = Array.isArray(body.tools) ? body.tools.filter(isObject).filter((t) => t.type === undefined || t.type === 'custom') : [];
  if (clientTools.length === 0) return {};
  const tools = clientTools.map((t) => ({
    type: 'function', function: { name: String(t.name ?? ''), ...(typeof t.description === 'string' ? { description: t.description } : {}), parameters: isObject(t.input_schema) ? t.input_schema : { type: 'object' } },
  }));
  const c = isObject(body.tool_choice) ? body.tool_choice : {};
  const choice = c.type === 'any' ? 'required' : c.type === 'none' ? 'none' : c.type === 'tool' ? { type: 'function', function: { name: String(c.name ?? '') } } : c.type === 'auto' ? 'auto' : undefined;
  return { tools, ...(choice ? { tool_choice: choice } : {}), ...(c.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {}) };
}

/**
 * A mid-conversation system message as a canonical system message at its place, or
 * nothing when its beta `clear_at: "next_user_message"` hides it (a user turn follows).
 */
function canonicalSystem(m: { content: unknown; clear_at?: unknown }, userFollows: boolean): ChatMessage[] {
  const text = typeof m.content === 'string' ? m.content : promptText([m.content ?? '']);
  return text.length === 0 || (m.clear_at === 'next_user_message' && userFollows) ? [] : [{ role: 'system', content: text }];
}

function canonicalBody(body: Record<string, unknown>, messages: Array<{ role: string; content: unknown }>, system: string, maxTokens: number | undefined): ChatRequest['body'] {
  const out: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  messages.forEach((m, i) => { out.push(...(m.role === 'system' ? canonicalSystem(m, lastUser > i) : canonicalMessages(m))); });
  const metadata = isObject(body.metadata) ? body.metadata : {};
  return {
    model: body.model,
    messages: out,
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    ...(body.stream === true ? { stream: true } : {}),
    ...(Array.isArray(body.stop_sequences) ? { stop: body.stop_sequences } : {}),
    ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === 'number' ? { top_p: body.top_p } : {}),
    ...(typeof metadata.user_id === 'string' ? { user: metadata.user_id } : {}),
    ...canonicalTools(body),
  };
}
