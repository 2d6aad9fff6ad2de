/**
 * OpenAI Responses API: `POST …/v1/responses`, a Response object or its named SSE
 * events (response.created … response.completed). Stateless like a request with
 * `store: false`: an item id or a previous_response_id it never issued is refused, as
 * OpenAI refuses ids it did not persist — the gateway must send whole items.
 */

import { applyFaults, sendError, sendJson, streamPlan, writeEvents, type Handler } from './http.js';
import { asArray, asNumber, asObject, asString, textChars, type JsonObject } from './json.js';
import { jsonReply, pieces, plannedCalls, type PlannedCall } from './features.js';
import { openaiError, openaiErrorShape, openaiJsonPreamble } from './openai.js';
import { planReply, promptTokens, textTokens } from './reply.js';

const itemsOf = (input: unknown): JsonObject[] =>
  typeof input === 'string' ? [{ role: 'user', content: input }] : (asArray(input) ?? []).map(asObject).filter((x): x is JsonObject => x !== undefined);

/** What the request refers to that only a stored response could resolve, as OpenAI words the refusal. */
function unresolvable(body: JsonObject, items: readonly JsonObject[]): string | undefined {
  const prev = asString(body['previous_response_id']);
  if (prev !== undefined) return `Previous response with id '${prev}' not found.`;
  // An additional_tools item (Codex) carries its tools whole: its id refers to nothing stored.
  const ref = items.find((it) => it['type'] === 'item_reference' || (body['store'] === false && typeof it['id'] === 'string' && it['type'] !== 'additional_tools'));
  return ref ? `Item with id '${String(ref['id'])}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.` : undefined;
}

interface Reply {
  readonly text: readonly string[];
  readonly calls: ReadonlyArray<PlannedCall & { namespace?: string | undefined }>;
  readonly capped: boolean;
  readonly outputTokens: number;
}

/** A declared function: its name, and the namespace it was declared in (a Codex `namespace` tool), if any. */
interface Declared { name: string; schema: unknown; namespace?: string }

/** Function tools of a tool list: plain ones, and those of `namespace` tools with their namespace. */
function functionsOf(tools: unknown): Declared[] {
  return (asArray(tools) ?? []).map(asObject).flatMap((t): Declared[] => {
    if (t?.['type'] === 'function' && typeof t['name'] === 'string') return [{ name: t['name'], schema: t['parameters'] }];
    const ns = t?.['type'] === 'namespace' ? asString(t['name']) : undefined;
    return ns === undefined ? [] : functionsOf(t?.['tools']).map((f) => ({ ...f, namespace: ns }));
  });
}

/** Every function the request declares: in `tools`, and in Codex's `additional_tools` input items. */
const declaredFunctions = (body: JsonObject, items: readonly JsonObject[]): Declared[] =>
  [...functionsOf(body['tools']), ...items.filter((it) => it['type'] === 'additional_tools').flatMap((it) => functionsOf(it['tools']))];

function replyFor(body: JsonObject, items: readonly JsonObject[], d: Parameters<Handler>[0]['directives']): Reply {
  const tools = declaredFunctions(body, items);
  const choice = body['tool_choice'];
  const last = items[items.length - 1];
  const calls = plannedCalls(tools, { choiceNone: choice === 'none', named: asString(asObject(choice)?.['name']), answeredTools: last?.['type'] === 'function_call_output', d })
    .map((c) => ({ ...c, namespace: tools.find((t) => t.name === c.name)?.namespace }));
  if (calls.length > 0) return { text: [], calls, capped: false, outputTokens: calls.reduce((n, c) => n + textTokens(c.arguments), 0) };
  const format = asObject(asObject(body['text'])?.['format']);
  if (format?.['type'] === 'json_object' || format?.['type'] === 'json_schema') {
    const text = jsonReply(format['schema']);
    const parts = pieces(text, Math.ceil(text.length / 4));
    return { text: parts, calls: [], capped: false, outputTokens: parts.length };
  }
  const plan = planReply(d, asNumber(body['max_output_tokens']));
  return { text: plan.pieces, calls: [], capped: plan.capped, outputTokens: plan.pieces.length };
}

function inputTokens(body: JsonObject, items: readonly JsonObject[]): number {
  let chars = textChars(body['instructions']);
  for (const it of items) chars += textChars(it['content']) + textChars(it['output']) + textChars(it['arguments']);
  return promptTokens(chars, items.length);
}

export const handleResponses: Handler = async (req, res, env) => {
  const pre = openaiJsonPreamble(req, res);
  if (pre === undefined) return;
  const items = itemsOf(pre.body['input']);
  if (items.length === 0) {
    sendError(res, openaiError(400, "Missing required parameter: 'input'.", 'invalid_request_error', 'missing_required_parameter', 'input'));
    return;
  }
  const refusal = unresolvable(pre.body, items);
  if (refusal !== undefined) {
    sendError(res, openaiError(400, refusal, 'invalid_request_error', null, 'input'));
    return;
  }
  const stream = pre.body['stream'] === true;
  const d = req.directives;
  if (await applyFaults(res, d, openaiErrorShape, stream)) return;
  const seq = env.nextId();
  const reply = replyFor(pre.body, items, d);
  const input = inputTokens(pre.body, items);
  const usage = {
    input_tokens: input, input_tokens_details: { cached_tokens: 0 }, output_tokens: reply.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + reply.outputTokens,
  };
  const output = outputItems(seq, reply);
  const base: JsonObject = {
    id: `resp_sim${seq}`, object: 'response', created_at: Math.floor(Date.now() / 1000), error: null,
    incomplete_details: reply.capped ? { reason: 'max_output_tokens' } : null, instructions: pre.body['instructions'] ?? null,
    max_output_tokens: pre.body['max_output_tokens'] ?? null, model: pre.model, parallel_tool_calls: true, previous_response_id: null,
    store: pre.body['store'] !== false, temperature: 1, text: pre.body['text'] ?? { format: { type: 'text' } }, tool_choice: pre.body['tool_choice'] ?? 'auto',
    tools: pre.body['tools'] ?? [], top_p: 1, truncation: 'disabled', user: null, metadata: {},
  };
  const done: JsonObject = { ...base, status: reply.capped ? 'incomplete' : 'completed', output, usage };
  if (!stream) {
    sendJson(res, 200, done);
    return;
  }
  await writeEvents(res, responseEvents(base, done, reply), streamPlan(d, 'text/event-stream; charset=utf-8', errorEvent()));
};

function outputItems(seq: string, reply: Reply): JsonObject[] {
  if (reply.calls.length > 0) {
    return reply.calls.map((c, i) => ({
      type: 'function_call', id: `fc_sim${seq}_${i}`, call_id: `call_sim${seq}_${i}`, ...(c.namespace !== undefined ? { namespace: c.namespace } : {}), name: c.name, arguments: c.arguments, status: 'completed',
    }));
  }
  const text = reply.text.join('');
  return [{ type: 'message', id: `msg_sim${seq}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] }];
}

function errorEvent(): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'server_error', message: 'The server had an error while processing your request. (simulated)', param: null, sequence_number: 0 })}\n\n`;
}

/** The named event sequence of a streamed response, numbered. */
function responseEvents(base: JsonObject, done: JsonObject, reply: Reply): string[] {
  let n = 0;
  const ev = (type: string, body: JsonObject): string => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...body })}\n\n`;
  const progress = { ...base, status: 'in_progress', output: [], usage: null };
  const events = [ev('response.created', { response: progress }), ev('response.in_progress', { response: progress })];
  const output = done['output'] as JsonObject[];
  output.forEach((item, index) => {
    if (item['type'] === 'function_call') {
      events.push(ev('response.output_item.added', { output_index: index, item: { ...item, arguments: '', status: 'in_progress' } }));
      for (const p of pieces(String(item['arguments']), 2)) events.push(ev('response.function_call_arguments.delta', { item_id: item['id'], output_index: index, delta: p }));
      events.push(ev('response.function_call_arguments.done', { item_id: item['id'], output_index: index, arguments: item['arguments'] }));
    } else {
      const text = reply.text.join('');
      const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      events.push(ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } }),
        ev('response.content_part.added', { item_id: item['id'], output_index: index, content_index: 0, part }));
      for (const delta of reply.text) events.push(ev('response.output_text.delta', { item_id: item['id'], output_index: index, content_index: 0, delta, logprobs: [] }));
      events.push(ev('response.output_text.done', { item_id: item['id'], output_index: index, content_index: 0, text, logprobs: [] }),
        ev('response.content_part.done', { item_id: item['id'], output_index: index, content_index: 0, part: { ...part, text } }));
    }
    events.push(ev('response.output_item.done', { output_index: index, item }));
  });
  events.push(ev(done['status'] === 'completed' ? 'response.completed' : 'response.incomplete', { response: done }));
  return events;
}

