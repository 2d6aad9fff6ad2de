/**
 * Amazon Bedrock Runtime: `POST …/model/{modelId}/converse`, `/converse-stream` (AWS
 * event-stream framing, encoded with @smithy/eventstream-codec), and InvokeModel
 * (`/invoke`, `/invoke-with-response-stream`) for Anthropic bodies, as the Anthropic
 * Bedrock SDK sends them, and for Titan Text Embeddings V2 (bedrock-titan.ts). Every request must carry a valid SigV4 signature
 * (aws-sigv4.ts). Errors are AWS's: `{"message"}` with the type in x-amzn-ErrorType;
 * `[[sim:status=N]]` picks the type a status has at Bedrock, `[[sim:aws_error=Type]]` a type by name.
 */

import type { ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { verifySigV4, type AwsFault } from './aws-sigv4.js';
import { invokeTitanEmbed, isTitanEmbedModel } from './bedrock-titan.js';
import { pieces, plannedCalls, type PlannedCall } from './features.js';
import { pause, sendJson, type Handler, type SimRequest } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject, textChars, type JsonObject } from './json.js';
import { planReply, promptTokens, textTokens } from './reply.js';
import type { Directives } from './directives.js';

/** Bedrock's error types and their statuses. */
const TYPES: Readonly<Record<string, { status: number; message: string }>> = {
  ThrottlingException: { status: 429, message: 'Too many requests, please wait before trying again.' },
  ModelNotReadyException: { status: 429, message: 'Model is not ready to serve inference requests. The model will be ready in a few minutes.' },
  ValidationException: { status: 400, message: 'Malformed input request, please reformat your input and try again.' },
  AccessDeniedException: { status: 403, message: 'You don\'t have access to the model with the specified model ID.' },
  ResourceNotFoundException: { status: 404, message: 'The provided model identifier is invalid.' },
  ModelTimeoutException: { status: 408, message: 'Model has timed out in processing the request.' },
  ModelErrorException: { status: 424, message: 'The model returned an error.' },
  InternalServerException: { status: 500, message: 'The server encountered an internal error.' },
  ServiceUnavailableException: { status: 503, message: 'Service is unavailable. Try again later.' },
};
const BY_STATUS: Readonly<Record<number, string>> = { 400: 'ValidationException', 403: 'AccessDeniedException', 404: 'ResourceNotFoundException', 408: 'ModelTimeoutException', 424: 'ModelErrorException', 429: 'ThrottlingException', 500: 'InternalServerException', 503: 'ServiceUnavailableException' };

function sendAwsError(res: ServerResponse, fault: AwsFault): void {
  sendJson(res, fault.status, { message: fault.message }, { 'x-amzn-errortype': `${fault.type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': randomUUID() });
}

/** The fault a directive asks for: `aws_error=Type` by name, `status=N` by the type Bedrock answers N with. */
function directedFault(d: Directives): AwsFault | undefined {
  const type = d.awsError ?? (d.status !== undefined && d.status !== 200 ? BY_STATUS[d.status] ?? (d.status >= 500 ? 'InternalServerException' : 'ValidationException') : undefined);
  if (type === undefined) return undefined;
  const known = TYPES[type];
  return { status: d.status ?? known?.status ?? 400, type, message: known?.message ?? `Simulated ${type}.` };
}

const ACTION = /\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/;

export function isBedrockPath(path: string): boolean {
  return ACTION.test(path);
}

/** Bedrock Runtime, checking each signature against this simulator's AWS keys (`env.aws`). */
export const handleBedrock: Handler = async (req, res, env) => {
  {
    const aws = env.aws;
    const [, encodedModel = '', action = ''] = ACTION.exec(req.path) ?? [];
    const fault = await verifySigV4(req, req.query.toString(), aws, 'bedrock');
    if (fault) return sendAwsError(res, fault);
    const d = req.directives;
    if (d.delayMs !== undefined && !(await pause(res, d.delayMs))) return;
    const directed = directedFault(d);
    if (directed) return sendAwsError(res, directed);
    const body = parseJsonObject(req.body);
    if (!body) return sendAwsError(res, { status: 400, type: 'ValidationException', message: TYPES.ValidationException!.message });
    const model = decodeURIComponent(encodedModel);
    const seq = env.nextId();
    if (action === 'converse' || action === 'converse-stream') return converse(req, res, body, action === 'converse-stream', seq);
    if (action === 'invoke' && isTitanEmbedModel(model)) {
      const refused = invokeTitanEmbed(res, d, body);
      return refused && sendAwsError(res, refused);
    }
    return invokeAnthropic(res, d, model, body, action === 'invoke-with-response-stream', seq);
  }
};

type Block = JsonObject;
const blocksOf = (m: unknown): Block[] => (asArray(asObject(m)?.['content']) ?? []).map(asObject).filter((b): b is Block => b !== undefined);

/** Converse's own checks: roles alternate from the user, no blank text, every toolResult answers a toolUse of the turn before. */
function converseProblem(messages: readonly unknown[]): string | undefined {
  if (messages.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  for (const [i, m] of messages.entries()) {
    const role = asString(asObject(m)?.['role']);
    if (role !== (i % 2 === 0 ? 'user' : 'assistant')) return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.';
    const blocks = blocksOf(m);
    if (blocks.length === 0) return `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`;
    for (const [j, b] of blocks.entries()) {
      if (typeof b['text'] === 'string' && b['text'].trim() === '') return `The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`;
    }
    const asked = new Set(blocksOf(messages[i - 1]).map((b) => asObject(b['toolUse'])?.['toolUseId']));
    const stray = blocks.map((b) => asObject(b['toolResult'])).find((r) => r !== undefined && !asked.has(r['toolUseId']));
    if (stray) return `The toolResult blocks at messages.${i}.content contain a toolUseId ${String(stray['toolUseId'])} that does not match a toolUse in the previous turn.`;
  }
  return undefined;
}

interface SimToolUse extends PlannedCall { readonly id: string }

async function converse(req: SimRequest, res: ServerResponse, body: JsonObject, stream: boolean, seq: string): Promise<void> {
  const d = req.directives;
  const messages = asArray(body['messages']);
  const problem = messages === undefined ? 'messages: required' : converseProblem(messages);
  if (problem !== undefined || messages === undefined) return sendAwsError(res, { status: 400, type: 'ValidationException', message: problem ?? '' });
  let chars = textChars(body['system']);
  for (const m of messages) chars += textChars(asObject(m)?.['content']);
  const inputTokens = d.usage ?? promptTokens(chars, messages.length);
  const config = asObject(body['toolConfig']);
  const tools = (asArray(config?.['tools']) ?? []).flatMap((t) => {
    const spec = asObject(asObject(t)?.['toolSpec']);
    const name = asString(spec?.['name']);
    return name === undefined ? [] : [{ name, schema: asObject(spec?.['inputSchema'])?.['json'] }];
  });
  const answered = blocksOf(messages[messages.length - 1]).some((b) => b['toolResult'] !== undefined);
  const named = asString(asObject(asObject(config?.['toolChoice'])?.['tool'])?.['name']);
  const calls: SimToolUse[] = plannedCalls(tools, { choiceNone: false, named, answeredTools: answered, d }).map((c, i) => ({ ...c, id: `tooluse_sim${seq}_${i}` }));
  const plan = calls.length > 0 ? { pieces: [], capped: false } : planReply(d, asNumber(asObject(body['inferenceConfig'])?.['maxTokens']));
  const stopReason = calls.length > 0 ? 'tool_use' : plan.capped ? 'max_tokens' : 'end_turn';
  const outputTokens = plan.pieces.length + calls.reduce((n, c) => n + textTokens(c.arguments), 0);
  const usage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
  if (!stream) {
    const content = calls.length > 0 ? calls.map((c) => ({ toolUse: { toolUseId: c.id, name: c.name, input: c.args } })) : [{ text: plan.pieces.join('') }];
    sendJson(res, 200, { output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: { latencyMs: 1 } }, { 'x-amzn-requestid': randomUUID() });
    return;
  }
  const events: Message[] = [event('messageStart', { role: 'assistant' })];
  if (calls.length > 0) {
    calls.forEach((c, i) => {
      events.push(event('contentBlockStart', { contentBlockIndex: i, start: { toolUse: { toolUseId: c.id, name: c.name } } }));
      for (const p of pieces(c.arguments, 2)) events.push(event('contentBlockDelta', { contentBlockIndex: i, delta: { toolUse: { input: p } } }));
      events.push(event('contentBlockStop', { contentBlockIndex: i }));
    });
  } else {
    for (const p of plan.pieces) events.push(event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: p } }));
    events.push(event('contentBlockStop', { contentBlockIndex: 0 }));
  }
  events.push(event('messageStop', { stopReason }), event('metadata', { usage, metrics: { latencyMs: 1 } }));
  await writeFrames(res, events, d, 'modelStreamErrorException');
}

/** InvokeModel with an Anthropic Messages body (`anthropic_version: bedrock-2023-05-31`, no model field): Anthropic's reply. */
async function invokeAnthropic(res: ServerResponse, d: Directives, model: string, body: JsonObject, stream: boolean, seq: string): Promise<void> {
  const messages = asArray(body['messages']);
  if (!model.includes('anthropic.') || asString(body['anthropic_version']) === undefined || messages === undefined || asNumber(body['max_tokens']) === undefined) {
    return sendAwsError(res, { status: 400, type: 'ValidationException', message: 'Malformed input request: anthropic_version, max_tokens and messages are required' });
  }
  if (body['model'] !== undefined) return sendAwsError(res, { status: 400, type: 'ValidationException', message: 'Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.' });
  let chars = textChars(body['system']);
  for (const m of messages) chars += textChars(asObject(m)?.['content']);
  const input = d.usage ?? promptTokens(chars, messages.length);
  const plan = planReply(d, asNumber(body['max_tokens']));
  const stopReason = plan.capped ? 'max_tokens' : 'end_turn';
  const message = { id: `msg_bdrk_sim${seq}`, type: 'message', role: 'assistant', model, content: [] as JsonObject[], stop_reason: null as string | null, stop_sequence: null, usage: { input_tokens: input, output_tokens: 0 } };
  if (!stream) {
    sendJson(res, 200, { ...message, content: [{ type: 'text', text: plan.pieces.join('') }], stop_reason: stopReason, usage: { input_tokens: input, output_tokens: plan.pieces.length } });
    return;
  }
  const chunk = (json: JsonObject): Message => event('chunk', { bytes: Buffer.from(JSON.stringify(json)).toString('base64') }, false);
  const events = [
    chunk({ type: 'message_start', message }),
    chunk({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    ...plan.pieces.map((p) => chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } })),
    chunk({ type: 'content_block_stop', index: 0 }),
    chunk({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: plan.pieces.length } }),
    chunk({ type: 'message_stop' }),
  ];
  await writeFrames(res, events, d, 'internalServerException');
}

/** One event-stream message; Converse events carry Bedrock's `p` padding field (clients must ignore it). */
function event(type: string, payload: JsonObject, pad = true): Message {
  return {
    headers: {
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: Buffer.from(JSON.stringify(pad ? { ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ'.slice(0, 4 + (type.length % 20)) } : payload)),
  };
}

function exception(type: string, message: string): Message {
  return {
    headers: {
      ':exception-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: Buffer.from(JSON.stringify({ message })),
  };
}

/**
 * Writes the frames under the stream directives: `stream_error` sends half then an
 * exception frame, `drop_mid_stream` half then a dropped connection, `chunk_bytes`
 * slices across frames, `chunk_delay_ms` pauses between frames.
 */
async function writeFrames(res: ServerResponse, events: Message[], d: Directives, errorType: string): Promise<void> {
  const codec = new EventStreamCodec((b) => Buffer.from(b).toString('utf8'), (t) => new Uint8Array(Buffer.from(t, 'utf8')));
  const cut = d.dropMidStream || d.streamError;
  const list = cut ? events.slice(0, Math.max(1, Math.floor(events.length / 2))) : events;
  if (d.streamError && !d.dropMidStream) list.push(exception(errorType, 'The system encountered an unexpected error during processing. Try your request again.'));
  const frames = list.map((m) => Buffer.from(codec.encode(m)));
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': randomUUID() });
  if (d.bodyDelayMs !== undefined) {
    res.flushHeaders();
    if (!(await pause(res, d.bodyDelayMs))) return;
  }
  const bytes = Buffer.concat(frames);
  const size = d.chunkBytes;
  const parts = size !== undefined ? Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size)) : d.chunkDelayMs ? frames : [bytes];
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1) {
      if (d.dropMidStream) res.write(part, () => res.destroy());
      else res.end(part);
      return;
    }
    res.write(part);
    if (!(await pause(res, d.chunkDelayMs ?? 0))) return;
    if (!d.chunkDelayMs) await new Promise((r) => setImmediate(r));
  }
  res.end();
}
