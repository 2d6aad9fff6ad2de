import type { IncomingHttpHeaders } from 'node:http';
import { invalidField } from '../../../../src/sdk.js';
import { isObject, promptText, promptTokenBound, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';

/** Client headers that steer an Anthropic request; forwarded when the provider speaks Anthropic Messages. */
const FORWARDED_HEADERS = ['anthropic-version', 'anthropic-beta'];

/** Request fields with no canonical (OpenAI chat) equivalent that change what the reply is. */
const NATIVE_ONLY_FIELDS = ['tools', 'tool_choice', 'thinking', 'mcp_servers', 'container'];

/**
 * Validates an Anthropic Messages request (`POST /v1/messages`) and gives it in
 * canonical form too, so any chat model can serve it. Every failure names its field
 * (400). `max_tokens` is optional here: a provider that needs it refuses the request
 * itself, and that refusal reaches the client (spec §7).
 */
export function parseMessagesRequest(body: unknown, headers: IncomingHttpHeaders): ChatRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const { model, messages, system, stream } = body;
  if (typeof model !== 'string' || model.length === 0) throw invalidField('model', 'model is required and must be a non-empty string');
  if (!Array.isArray(messages) || messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array');
  messages.forEach((m, i) => validateMessage(m, i));
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
    promptBound: promptTokenBound([system ?? null, messages], body.tools ?? null),
    native: { format: 'anthropic', body, headers: forwardedHeaders(headers) },
    untranslatable: untranslatable(body, typed),
  };
}

function validateMessage(m: unknown, i: number): void {
  const param = `messages[${i}]`;
  if (!isObject(m)) throw invalidField(param, `${param} must be an object with role and content`);
  if (m.role !== 'user' && m.role !== 'assistant') throw invalidField(`${param}.role`, `${param}.role must be "user" or "assistant" (the system prompt goes in the top-level system field)`);
  if (typeof m.content === 'string') return;
  if (!Array.isArray(m.content)) throw invalidField(`${param}.content`, `${param}.content must be a string or an array of content blocks`);
  m.content.forEach((block, j) => validateBlock(block, `${param}.content[${j}]`));
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

/** What the canonical form cannot carry: such a request is served only by an Anthropic-dialect provider. */
function untranslatable(body: Record<string, unknown>, messages: Array<{ content: unknown }>): Untranslatable | undefined {
  const field = NATIVE_ONLY_FIELDS.find((f) => body[f] !== undefined && body[f] !== null && !(f === 'thinking' && isObject(body.thinking) && body.thinking.type === 'disabled'));
  const why = 'can only be served by a model whose provider speaks Anthropic Messages';
  if (field) return { param: field, message: `${field} ${why}` };
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    const j = m.content.findIndex((b) => isObject(b) && b.type !== 'text' && b.type !== 'image');
    if (j >= 0) return { param: `messages[${i}].content[${j}]`, message: `${String((m.content[j] as { type: string }).type)} blocks ${why}` };
  }
  return undefined;
}

/** An Anthropic content value as OpenAI chat content (text and image parts). */
function canonicalContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return content.filter(isObject).map((b) => {
    if (b.type !== 'image') return { type: 'text', text: typeof b.text === 'string' ? b.text : '' };
    const s = isObject(b.source) ? b.source : {};
    const url = s.type === 'base64' ? `data:${String(s.media_type)};base64,${String(s.data)}` : String(s.url ?? '');
    return { type: 'image_url', image_url: { url } };
  });
}

function canonicalBody(body: Record<string, unknown>, messages: Array<{ role: string; content: unknown }>, system: string, maxTokens: number | undefined): ChatRequest['body'] {
  const out: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const m of messages) out.push({ role: m.role, content: canonicalContent(m.content) });
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
  };
}
