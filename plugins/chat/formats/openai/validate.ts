import { invalidField } from '../../../../src/sdk.js';
import { isObject, MAX_CHOICES, promptText, promptTokenBound, type ChatMessage, type ChatRequest } from '../../request.js';
import { fromOpenAI, type Reasoning } from '../../reasoning.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/**
 * Validates an OpenAI chat completion request; every failure names its field (400).
 * `text`, the body's JSON as the client sent it, bounds the prompt without serialising
 * the messages again (see `promptTokenBound`).
 */
export function parseChatRequest(body: unknown, text?: string): ChatRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const { model, messages, stream, stream_options: streamOptions } = body;
  if (typeof model !== 'string' || model.length === 0) throw invalidField('model', 'model is required and must be a non-empty string');
  if (!Array.isArray(messages) || messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array');
  messages.forEach((m, i) => { validateMessage(m, i); });
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw invalidField('stream', 'stream must be a boolean');
  if (streamOptions !== undefined && streamOptions !== null && !isObject(streamOptions)) throw invalidField('stream_options', 'stream_options must be an object');
  // Upstreams differ in which of the two they honour (OpenAI takes max_completion_tokens over
  // max_tokens): the bound reserved for is the larger, and it is the only one sent (dialects/openai).
  const bounds = [positiveInt(body, 'max_tokens'), positiveInt(body, 'max_completion_tokens')].filter((v) => v !== undefined);
  const maxTokens = bounds.length > 0 ? Math.max(...bounds) : undefined;
  const choices = positiveInt(body, 'n');
  if (choices !== undefined && choices > MAX_CHOICES) throw invalidField('n', `n must be an integer from 1 to ${MAX_CHOICES}`);
  const typed = messages as ChatMessage[];
  return {
    model,
    body: body as ChatRequest['body'],
    stream: stream === true,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
    maxTokens,
    choices: choices ?? 1,
    prompt: promptText(typed.map((m) => m.content)),
    promptBound: promptTokenBound([messages, body.functions ?? null], body.tools ?? null, text),
    ...reasoningOf(fromOpenAI(body.reasoning_effort)),
  };
}

function reasoningOf(reasoning: Reasoning | undefined): Pick<ChatRequest, 'reasoning'> {
  return reasoning ? { reasoning } : {};
}

function validateMessage(m: unknown, i: number): void {
  const param = `messages[${i}]`;
  if (!isObject(m)) throw invalidField(param, `${param} must be an object with role and content`);
  if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
    throw invalidField(`${param}.role`, `${param}.role must be one of ${[...ROLES].join(', ')}`);
  }
  const c = m.content;
  const assistantWithTools = m.role === 'assistant' && (c === null || c === undefined) && Array.isArray(m.tool_calls);
  if (typeof c === 'string' || assistantWithTools) return;
  if (Array.isArray(c) && (m.role === 'user' || m.role === 'system' || m.role === 'developer' || m.role === 'assistant' || m.role === 'tool')) {
    c.forEach((part, j) => {
      if (!isObject(part) || typeof part.type !== 'string') throw invalidField(`${param}.content[${j}]`, `${param}.content[${j}] must be a content part with a type`);
      if (part.type === 'text' && typeof part.text !== 'string') throw invalidField(`${param}.content[${j}].text`, 'a text part needs a string text');
    });
    return;
  }
  throw invalidField(`${param}.content`, `${param}.content must be a string or an array of content parts`);
}

function positiveInt(body: Record<string, unknown>, field: string): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalidField(field, `${field} must be an integer of at least 1`);
  return v;
}
