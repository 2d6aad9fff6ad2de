/**
 * OpenAI wire format: chat completions (buffered and SSE) and embeddings, plus the
 * auth, model and error conventions shared with the audio routes (openai-audio.ts).
 * The chat path is the benchmark upstream, so it serializes by string templates and
 * does no work beyond parsing the body once.
 */

import type { ServerResponse } from 'node:http';
import { applyFaults, bearer, isRejectedKey, sendError, sendJson, streamPlan, writeEvents, type ErrorReply, type ErrorShape, type Handler, type SimRequest } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject, textChars, type JsonObject } from './json.js';
import { jsonReply, logprobsFor, pieces, plannedCalls, type DeclaredTool, type PlannedCall } from './features.js';
import { planReply, promptTokens, textTokens, thoughtPlan, type ReplyPlan } from './reply.js';
import { embedText, toBase64, toFloatList } from './vectors.js';

const MISSING_KEY =
  "You didn't provide an API key. You need to provide your API key in an Authorization header " +
  'using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from ' +
  'https://platform.openai.com/account/api-keys.';

export function openaiError(
  status: number,
  message: string,
  type: string,
  code: string | null,
  param: string | null = null,
): ErrorReply {
  return { status, body: { error: { message, type, param, code } } };
}

/** Directive-driven errors, shaped as OpenAI sends them. */
export const openaiErrorShape: ErrorShape = (status) => {
  if (status === 429) {
    return openaiError(429, 'Rate limit reached for requests (simulated).', 'requests', 'rate_limit_exceeded');
  }
  if (status >= 500) {
    return openaiError(status, 'The server had an error while processing your request. Sorry about that! (simulated)', 'server_error', null);
  }
  if (status === 401) return openaiError(401, 'Incorrect API key provided (simulated).', 'invalid_request_error', 'invalid_api_key');
  if (status === 404) return openaiError(404, 'Not found (simulated).', 'invalid_request_error', 'not_found');
  return openaiError(status, `Simulated error with status ${status}.`, 'invalid_request_error', null);
};

/** Checks the Bearer key; sends the 401 and returns false when it is missing or rejected. */
export function openaiAuth(req: SimRequest, res: ServerResponse): boolean {
  const key = bearer(req.headers);
  if (key === undefined) {
    sendError(res, openaiError(401, MISSING_KEY, 'invalid_request_error', null));
    return false;
  }
  if (isRejectedKey(key)) {
    const shown = key.length > 8 ? `${key.slice(0, 4)}****${key.slice(-4)}` : key;
    const message = `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`;
    sendError(res, openaiError(401, message, 'invalid_request_error', 'invalid_api_key'));
    return false;
  }
  return true;
}

/** Validates `model`; sends 400/404 and returns undefined when it is missing or unknown. */
export function openaiModel(res: ServerResponse, value: unknown): string | undefined {
  const model = asString(value);
  if (model === undefined || model === '') {
    sendError(res, openaiError(400, 'you must provide a model parameter', 'invalid_request_error', null));
    return undefined;
  }
  if (model.startsWith('unknown-')) {
    const message = `The model \`${model}\` does not exist or you do not have access to it.`;
    sendError(res, openaiError(404, message, 'invalid_request_error', 'model_not_found'));
    return undefined;
  }
  return model;
}

/** Auth, JSON body and model for the JSON routes; undefined when a reply was sent. */
export function openaiJsonPreamble(req: SimRequest, res: ServerResponse): { body: JsonObject; model: string } | undefined {
  if (!openaiAuth(req, res)) return undefined;
  const body = parseJsonObject(req.body);
  if (body === undefined) {
    const message = 'We could not parse the JSON body of your request.';
    sendError(res, openaiError(400, message, 'invalid_request_error', null));
    return undefined;
  }
  const model = openaiModel(res, body['model']);
  return model === undefined ? undefined : { body, model };
}

interface ChatUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

function chatUsage(messages: readonly unknown[], completion: number, reported?: number, reasoning = 0): ChatUsage & JsonObject {
  let chars = 0;
  for (const m of messages) chars += textChars(asObject(m)?.['content']);
  const prompt = reported ?? promptTokens(chars, messages.length);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion + reasoning,
    total_tokens: prompt + completion + reasoning,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** OpenAI's reasoning models refuse `max_tokens` (they take `max_completion_tokens`). */
function refusesMaxTokens(model: string): boolean {
  return /^(o\d|gpt-5)/.test(model);
}

/** The functions a chat request declares. */
function chatTools(body: JsonObject): DeclaredTool[] {
  return (asArray(body['tools']) ?? []).flatMap((t) => {
    const f = asObject(asObject(t)?.['function']);
    const name = asString(f?.['name']);
    return name === undefined ? [] : [{ name, schema: f?.['parameters'] }];
  });
}

/** What a chat reply holds: its text pieces (one token each), its tool calls, its finish reason. */
interface ChatContent {
  readonly plan: ReplyPlan;
  readonly calls: readonly PlannedCall[];
  readonly finish: string;
  readonly completionTokens: number;
}

/**
 * The reply to a chat request: tool calls when it declares tools (and has not just
 * answered them), JSON for a JSON response format, else the planned words.
 */
function chatContent(body: JsonObject, messages: readonly unknown[], d: SimRequest['directives'], maxTokens: number | undefined): ChatContent {
  if (d.safetyBlock) return { plan: { pieces: [], capped: false }, calls: [], finish: 'content_filter', completionTokens: 0 };
  if (d.safetyFinish) {
    // The output filter cut the reply: the first half of it was generated (and is billed).
    const planned = planReply(d, maxTokens).pieces;
    const cut = planned.slice(0, Math.max(1, Math.ceil(planned.length / 2)));
    return { plan: { pieces: cut, capped: false }, calls: [], finish: 'content_filter', completionTokens: cut.length };
  }
  const choice = body['tool_choice'];
  const named = asString(asObject(asObject(choice)?.['function'])?.['name']);
  const last = asObject(messages[messages.length - 1]);
  const calls = plannedCalls(chatTools(body), { choiceNone: choice === 'none', named, answeredTools: last?.['role'] === 'tool', d });
  if (calls.length > 0) {
    return { plan: { pieces: [], capped: false }, calls, finish: 'tool_calls', completionTokens: calls.reduce((n, c) => n + textTokens(c.arguments), 0) };
  }
  const format = asObject(body['response_format']);
  if (format?.['type'] === 'json_object' || format?.['type'] === 'json_schema') {
    const text = jsonReply(asObject(format['json_schema'])?.['schema']);
    const parts = pieces(text, Math.ceil(text.length / 4));
    return { plan: { pieces: parts, capped: false }, calls: [], finish: 'stop', completionTokens: parts.length };
  }
  const plan = planReply(d, maxTokens);
  return { plan, calls: [], finish: plan.capped ? 'length' : 'stop', completionTokens: plan.pieces.length };
}

export const handleChat: Handler = async (req, res, env) => {
  const pre = openaiJsonPreamble(req, res);
  if (pre === undefined) return;
  const messages = asArray(pre.body['messages']);
  if (messages === undefined || messages.length === 0) {
    const message = "Missing required parameter: 'messages'.";
    sendError(res, openaiError(400, message, 'invalid_request_error', 'missing_required_parameter', 'messages'));
    return;
  }
  if (refusesMaxTokens(pre.model) && pre.body['max_tokens'] !== undefined) {
    const message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
    sendError(res, openaiError(400, message, 'invalid_request_error', 'unsupported_parameter', 'max_tokens'));
    return;
  }
  const stream = pre.body['stream'] === true;
  const d = req.directives;
  if (await applyFaults(res, d, openaiErrorShape, stream)) return;
  const maxTokens = asNumber(pre.body['max_completion_tokens']) ?? asNumber(pre.body['max_tokens']);
  const content = chatContent(pre.body, messages, d, maxTokens);
  // `n` choices, each the same reply; completion tokens are billed for all of them, the prompt once.
  const n = Math.min(Math.max(Math.floor(asNumber(pre.body['n']) ?? 1), 1), 128);
  const top = pre.body['logprobs'] === true ? Math.max(0, Math.floor(asNumber(pre.body['top_logprobs']) ?? 0)) : -1;
  // A reasoning model asked for reasoning spends tokens on it, billed as output; OpenAI returns none of its text.
  const effort = pre.body['reasoning_effort'];
  const reasoning = typeof effort === 'string' && effort !== 'none' ? n * thoughtPlan(effort).tokens : 0;
  const usage = chatUsage(messages, n * content.completionTokens, d.usage, reasoning);
  const id = `chatcmpl-sim${env.nextId()}`;
  const created = Math.floor(Date.now() / 1000);
  const calls = content.calls.map((c, i) => ({ id: `call_${id.slice(9)}_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  if (!stream) {
    const text = content.plan.pieces.join('');
    const message: JsonObject = { role: 'assistant', content: calls.length > 0 ? null : text, refusal: null, annotations: [] };
    if (calls.length > 0) message['tool_calls'] = calls;
    const logprobs = top >= 0 ? { content: logprobsFor(content.plan.pieces, top), refusal: null } : null;
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: pre.model,
      choices: Array.from({ length: n }, (_, index) => ({ index, message, logprobs, finish_reason: content.finish, ...(req.azure ? { content_filter_results: filterResults(content.finish) } : {}) })),
      ...(req.azure ? { prompt_filter_results: PROMPT_FILTER_RESULTS } : {}),
      usage,
      service_tier: 'default',
      system_fingerprint: 'fp_simulator',
    });
    return;
  }
  const includeUsage = asObject(pre.body['stream_options'])?.['include_usage'] === true;
  const input: ChunkInput = { id, created, model: pre.model, plan: content.plan, finish: content.finish, usage, includeUsage };
  const events = n === 1 && calls.length === 0 && top < 0 ? chatChunks(input) : richChunks(input, { n, calls, top });
  // Azure opens every stream with the prompt's filter results, in a chunk with no choice, id or model.
  if (req.azure) events.unshift(`data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: PROMPT_FILTER_RESULTS })}\n\n`);
  const errorEvent = `data: ${JSON.stringify(openaiErrorShape(500).body)}\n\n`;
  await writeEvents(res, events, streamPlan(d, 'text/event-stream; charset=utf-8', errorEvent));
};

const SAFE = { filtered: false, severity: 'safe' };
/** Azure's content filter verdict on the prompt, in every Azure chat reply. */
const PROMPT_FILTER_RESULTS = [{ prompt_index: 0, content_filter_results: { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE, jailbreak: { filtered: false, detected: false } } }];

/** Azure's verdict on a choice's output: violence filtered when the filter cut it. */
function filterResults(finish: string): JsonObject {
  return { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: finish === 'content_filter' ? { filtered: true, severity: 'medium' } : SAFE };
}

interface ChunkInput {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly plan: ReplyPlan;
  readonly finish: string;
  readonly usage: ChatUsage;
  readonly includeUsage: boolean;
}

/** SSE events of a streamed completion: role, one word per chunk, finish, usage, [DONE]. */
function chatChunks(c: ChunkInput): string[] {
  const head =
    `data: {"id":${JSON.stringify(c.id)},"object":"chat.completion.chunk","created":${c.created},` +
    `"model":${JSON.stringify(c.model)},"system_fingerprint":"fp_simulator","choices":[`;
  const tail = c.includeUsage ? '],"usage":null}\n\n' : ']}\n\n';
  const choice = (delta: string, finish: string | null): string =>
    `${head}{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}${tail}`;
  const events: string[] = [choice('{"role":"assistant","content":"","refusal":null}', null)];
  for (const piece of c.plan.pieces) events.push(choice(`{"content":${JSON.stringify(piece)}}`, null));
  events.push(choice('{}', c.finish));
  if (c.includeUsage) events.push(`${head}],"usage":${JSON.stringify(c.usage)}}\n\n`);
  events.push('data: [DONE]\n\n');
  return events;
}

/**
 * The general stream (n choices, tool calls, logprobs): per choice a role chunk, its
 * words (with their logprobs), each tool call as a chunk with its id and name and two
 * argument pieces, then the finish; usage and [DONE] last.
 */
function richChunks(c: ChunkInput, x: { n: number; calls: ReadonlyArray<{ id: string; function: { name: string; arguments: string } }>; top: number }): string[] {
  const chunk = (index: number, delta: JsonObject, finish: string | null, logprobs: unknown = null): string =>
    `data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, system_fingerprint: 'fp_simulator', choices: [{ index, delta, logprobs, finish_reason: finish }], ...(c.includeUsage ? { usage: null } : {}) })}\n\n`;
  const events: string[] = [];
  for (let i = 0; i < x.n; i++) {
    events.push(chunk(i, { role: 'assistant', content: x.calls.length > 0 ? null : '', refusal: null }, null));
    c.plan.pieces.forEach((piece, k) => {
      const lp = x.top >= 0 ? { content: logprobsFor([piece], x.top).map((l) => ({ ...l, logprob: -0.01 * (k + 1) })), refusal: null } : null;
      events.push(chunk(i, { content: piece }, null, lp));
    });
    x.calls.forEach((call, k) => {
      const [a, b] = [call.function.arguments.slice(0, Math.ceil(call.function.arguments.length / 2)), call.function.arguments.slice(Math.ceil(call.function.arguments.length / 2))];
      events.push(chunk(i, { tool_calls: [{ index: k, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }, null));
      for (const piece of [a, b]) if (piece) events.push(chunk(i, { tool_calls: [{ index: k, function: { arguments: piece } }] }, null));
    });
    events.push(chunk(i, {}, c.finish));
  }
  if (c.includeUsage) events.push(`data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, choices: [], usage: c.usage })}\n\n`);
  events.push('data: [DONE]\n\n');
  return events;
}

/** Native dimensions per model family; unknown models get the ada/3-small size. */
function nativeDims(model: string): number {
  return model.includes('3-large') ? 3072 : 1536;
}

/** Normalizes the four accepted `input` shapes to hashable texts and their token counts. */
function embeddingInputs(input: unknown): { key: string; tokens: number }[] | undefined {
  if (typeof input === 'string') return input === '' ? undefined : [{ key: input, tokens: textTokens(input) }];
  const items = asArray(input);
  if (items === undefined || items.length === 0) return undefined;
  if (items.every((x) => typeof x === 'number')) return [{ key: `tokens:${items.join(',')}`, tokens: items.length }];
  const out: { key: string; tokens: number }[] = [];
  for (const item of items) {
    if (typeof item === 'string' && item !== '') out.push({ key: item, tokens: textTokens(item) });
    else if (Array.isArray(item) && item.length > 0 && item.every((x) => typeof x === 'number')) {
      out.push({ key: `tokens:${item.join(',')}`, tokens: item.length });
    } else return undefined;
  }
  return out;
}

export const handleEmbeddings: Handler = async (req, res) => {
  const pre = openaiJsonPreamble(req, res);
  if (pre === undefined) return;
  const inputs = embeddingInputs(pre.body['input']);
  if (inputs === undefined) {
    sendError(res, openaiError(400, "'$.input' is invalid. Please check the API reference.", 'invalid_request_error', null, 'input'));
    return;
  }
  const requested = asNumber(pre.body['dimensions']);
  const dims = requested !== undefined && requested >= 1 ? Math.min(Math.floor(requested), 8192) : nativeDims(pre.model);
  const base64 = pre.body['encoding_format'] === 'base64';
  if (await applyFaults(res, req.directives, openaiErrorShape, false)) return;
  let tokens = 0;
  const data = inputs.map((input, index) => {
    tokens += input.tokens;
    const vec = embedText(input.key, dims);
    return { object: 'embedding', index, embedding: base64 ? toBase64(vec) : toFloatList(vec) };
  });
  sendJson(res, 200, {
    object: 'list',
    data,
    model: pre.model,
    usage: { prompt_tokens: req.directives.usage ?? tokens, total_tokens: req.directives.usage ?? tokens },
  });
};
