/**
 * Anthropic Messages wire format: `POST …/v1/messages`, buffered or streamed with
 * named SSE events (the SDK drops events without an `event:` line, so every event
 * carries one equal to its data's `type`).
 */

import type { ServerResponse } from 'node:http';
import { applyFaults, bearer, header, isRejectedKey, sendError, sendJson, streamPlan, writeEvents, type ErrorReply, type ErrorShape, type Handler, type SimRequest } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject, textChars, type JsonObject } from './json.js';
import { pieces, plannedCalls, type PlannedCall } from './features.js';
import { planReply, promptTokens, textTokens, thoughtPlan, type ReplyPlan, type ThoughtPlan } from './reply.js';

/** The version under which sampling parameters are rejected (wire-formats.md). */
const STRICT_VERSION = '2026-10-21';

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function anthropicError(status: number, type: string, message: string, requestId: string): ErrorReply {
  return {
    status,
    body: { type: 'error', error: { type, message }, request_id: requestId },
    headers: { 'request-id': requestId },
  };
}

/** Directive-driven errors in Anthropic's shape, tagged with this request's id. */
function anthropicErrorShape(requestId: string): ErrorShape {
  return (status) => {
    const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    const message = type === 'overloaded_error' ? 'Overloaded' : `Simulated ${type} (status ${status}).`;
    return anthropicError(status, type, message, requestId);
  };
}

interface MessagesRequest {
  readonly model: string;
  readonly maxTokens: number;
  readonly inputTokens: number;
  readonly stream: boolean;
  readonly body: JsonObject;
  readonly messages: readonly unknown[];
}

const blocksOf = (m: unknown, type: string): JsonObject[] =>
  (asArray(asObject(m)?.['content']) ?? []).map(asObject).filter((b): b is JsonObject => b?.['type'] === type);

/** As the API: every tool_result answers a tool_use of the message just before it. */
function unmatchedToolResult(messages: readonly unknown[]): string | undefined {
  for (let i = 0; i < messages.length; i++) {
    const asked = new Set(blocksOf(messages[i - 1], 'tool_use').map((b) => b['id']));
    const stray = blocksOf(messages[i], 'tool_result').find((b) => !asked.has(b['tool_use_id']));
    if (stray) {
      return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(stray['tool_use_id'])}. ` +
        'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.';
    }
  }
  return undefined;
}

/**
 * Auth and request validation in the order the API applies them; sends the error itself.
 * A token count (`count_tokens`) takes the same body without `max_tokens`.
 */
function validate(req: SimRequest, res: ServerResponse, requestId: string, count = false): MessagesRequest | undefined {
  const fail = (status: number, message: string): undefined => {
    sendError(res, anthropicError(status, ERROR_TYPES[status] ?? 'invalid_request_error', message, requestId));
    return undefined;
  };
  const key = header(req.headers, 'x-api-key') ?? bearer(req.headers);
  if (key === undefined || isRejectedKey(key)) return fail(401, 'invalid x-api-key');
  const body = parseJsonObject(req.body);
  if (body === undefined) return fail(400, 'There was an error parsing the body of your request.');
  const model = asString(body['model']);
  if (model === undefined) return fail(400, 'model: Field required');
  const maxTokens = count ? 0 : asNumber(body['max_tokens']);
  if (maxTokens === undefined) return fail(400, 'max_tokens: Field required');
  const messages = asArray(body['messages']);
  if (messages === undefined) return fail(400, 'messages: Field required');
  if (!count && header(req.headers, 'anthropic-version') === STRICT_VERSION) {
    for (const name of ['temperature', 'top_p', 'top_k']) {
      if (body[name] !== undefined) return fail(400, `${name}: Extra inputs are not permitted`);
    }
  }
  const stray = count ? undefined : unmatchedToolResult(messages);
  if (stray !== undefined) return fail(400, stray);
  if (model.startsWith('unknown-')) return fail(404, `model: ${model}`);
  return { model, maxTokens, inputTokens: countInput(body, messages), stream: body['stream'] === true, body, messages };
}

/**
 * `POST …/v1/messages/count_tokens`: the body of a message request without max_tokens,
 * answered `{input_tokens}` counted as a message's usage.input_tokens is, so both agree.
 */
export const handleCountTokens: Handler = async (req, res, env) => {
  const requestId = `req_sim${env.nextId()}`;
  const valid = validate(req, res, requestId, true);
  if (valid === undefined) return;
  if (await applyFaults(res, req.directives, anthropicErrorShape(requestId), false)) return;
  sendJson(res, 200, { input_tokens: req.directives.usage ?? valid.inputTokens }, { 'request-id': requestId });
};

function countInput(body: JsonObject, messages: readonly unknown[]): number {
  let chars = textChars(body['system']);
  for (const m of messages) chars += textChars(asObject(m)?.['content']);
  return promptTokens(chars, messages.length);
}

export const handleMessages: Handler = async (req, res, env) => {
  const requestId = `req_sim${env.nextId()}`;
  const valid = validate(req, res, requestId);
  if (valid === undefined) return;
  const d = req.directives;
  const r = d.usage === undefined ? valid : { ...valid, inputTokens: d.usage };
  const shape = anthropicErrorShape(requestId);
  if (await applyFaults(res, d, shape, r.stream)) return;
  const seq = env.nextId();
  const calls = d.safetyBlock ? [] : toolCalls(r, d, seq);
  const plan: ReplyPlan = d.safetyBlock || calls.length > 0 ? { pieces: [], capped: false } : planReply(d, r.maxTokens);
  const stopReason = d.safetyBlock ? 'refusal' : calls.length > 0 ? 'tool_use' : plan.capped ? 'max_tokens' : 'end_turn';
  // Thinking (enabled or adaptive) comes first, as a signed thinking block; its tokens are output tokens.
  const thinking = asObject(r.body['thinking']);
  const thought = !d.safetyBlock && (thinking?.['type'] === 'enabled' || thinking?.['type'] === 'adaptive') ? thoughtPlan(asObject(r.body['output_config'])?.['effort']) : undefined;
  const outputTokens = plan.pieces.length + calls.reduce((n, c) => n + textTokens(c.arguments), 0) + (thought?.tokens ?? 0);
  const id = `msg_sim${seq}`;
  const signature = `sim-signature-${seq}`;
  if (!r.stream) {
    const text = plan.pieces.join('');
    const answer = d.safetyBlock ? [] : calls.length > 0 ? calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args })) : [{ type: 'text', text }];
    const content = thought ? [{ type: 'thinking', thinking: thought.pieces.join(''), signature }, ...answer] : answer;
    sendJson(
      res,
      200,
      { id, type: 'message', role: 'assistant', model: r.model, content, stop_reason: stopReason, stop_sequence: null, usage: usage(r.inputTokens, outputTokens) },
      { 'request-id': requestId },
    );
    return;
  }
  const events = messageEvents(id, r, plan, stopReason, calls, outputTokens, thought && { ...thought, signature });
  const error = shape(529).body as JsonObject;
  const errorEvent = named('error', JSON.stringify(error));
  await writeEvents(res, events, streamPlan(d, 'text/event-stream; charset=utf-8', errorEvent));
};

function usage(input: number, output: number): JsonObject {
  return {
    input_tokens: input,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: output,
    service_tier: 'standard',
  };
}

function named(type: string, json: string): string {
  return `event: ${type}\ndata: ${json}\n\n`;
}

interface SimToolUse extends PlannedCall {
  readonly id: string;
}

/** The tool_use blocks of a reply to a request that declares tools (none once it answers them). */
function toolCalls(r: MessagesRequest, d: SimRequest['directives'], seq: string): SimToolUse[] {
  const tools = (asArray(r.body['tools']) ?? []).flatMap((t) => {
    const name = asString(asObject(t)?.['name']);
    const type = asObject(t)?.['type'];
    // Server tools (web_search_20250305…) run at Anthropic: never a tool_use for the client.
    return name === undefined || (type !== undefined && type !== 'custom') ? [] : [{ name, schema: asObject(t)?.['input_schema'] }];
  });
  const choice = asObject(r.body['tool_choice']);
  const answered = blocksOf(r.messages[r.messages.length - 1], 'tool_result').length > 0;
  return plannedCalls(tools, { choiceNone: choice?.['type'] === 'none', named: choice?.['type'] === 'tool' ? asString(choice['name']) : undefined, answeredTools: answered, d })
    .map((c, i) => ({ ...c, id: `toolu_sim${seq}_${i}` }));
}

/** Each tool_use block (numbered from `first`): its start, the input JSON in two input_json_delta pieces, its stop. */
function toolEvents(calls: readonly SimToolUse[], first: number): string[] {
  return calls.flatMap((c, i) => {
    const index = first + i;
    return [
      named('content_block_start', JSON.stringify({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } })),
      ...pieces(c.arguments, 2).map((p) => named('content_block_delta', JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: p } }))),
      named('content_block_stop', JSON.stringify({ type: 'content_block_stop', index })),
    ];
  });
}

/** A thinking block: its start, a thinking_delta per piece, the signature_delta, its stop. */
function thinkingEvents(t: ThoughtPlan & { signature: string }): string[] {
  return [
    named('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}'),
    ...t.pieces.map((p) => named('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: p } }))),
    named('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: t.signature } })),
    named('content_block_stop', '{"type":"content_block_stop","index":0}'),
  ];
}

/** message_start, the thinking block when asked, one text block streamed a word per delta (or the tool_use blocks), message_delta, message_stop. */
function messageEvents(id: string, r: MessagesRequest, plan: ReplyPlan, stopReason: string, calls: readonly SimToolUse[], outputTokens: number, thought?: ThoughtPlan & { signature: string }): string[] {
  const start = {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model: r.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(r.inputTokens, Math.min(1, plan.pieces.length)),
    },
  };
  const events = [named('message_start', JSON.stringify(start))];
  if (thought) events.push(...thinkingEvents(thought));
  const at = thought ? 1 : 0;
  if (calls.length > 0) events.push(...toolEvents(calls, at));
  else if (stopReason !== 'refusal') {
    events.push(
      named('content_block_start', `{"type":"content_block_start","index":${at},"content_block":{"type":"text","text":""}}`),
      named('ping', '{"type":"ping"}'),
    );
    for (const piece of plan.pieces) {
      const delta = `{"type":"content_block_delta","index":${at},"delta":{"type":"text_delta","text":${JSON.stringify(piece)}}}`;
      events.push(named('content_block_delta', delta));
    }
    events.push(named('content_block_stop', `{"type":"content_block_stop","index":${at}}`));
  }
  const delta = {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: outputTokens },
  };
  events.push(named('message_delta', JSON.stringify(delta)), named('message_stop', '{"type":"message_stop"}'));
  return events;
}
