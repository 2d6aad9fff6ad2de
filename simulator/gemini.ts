/**
 * Gemini API wire format under `…/v1beta/models/{model}:{method}`: generateContent,
 * streamGenerateContent (SSE or JSON array), embedContent, batchEmbedContents and
 * countTokens. Models named `lyria-3-*` are music models (lyria.ts).
 */

import type { ServerResponse } from 'node:http';
import { applyFaults, header, isRejectedKey, sendError, sendJson, type Handler, type SimEnv, type SimRequest } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject, textChars, type JsonObject } from './json.js';
import { blockedResponse, deliver, geminiError, geminiErrorShape, promptInfo, safetyFinishResponse, usageMetadata } from './gemini-wire.js';
import { handleLyria, isLyriaModel } from './lyria.js';
import { pngBytes } from './png.js';
import { jsonReply, pieces, plannedCalls, type PlannedCall } from './features.js';
import { planReply, textTokens, thoughtPlan, type ThoughtPlan } from './reply.js';
import { embedText, toFloatList } from './vectors.js';

const BAD_KEY_DETAILS = [
  {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: 'API_KEY_INVALID',
    domain: 'googleapis.com',
    metadata: { service: 'generativelanguage.googleapis.com' },
  },
];

/** `{model, method}` from `…/models/{model}:{method}`; undefined when the path is not one. */
function parseModelPath(path: string): { model: string; method: string } | undefined {
  const at = path.indexOf('/models/');
  if (at < 0) return undefined;
  const rest = path.slice(at + '/models/'.length);
  const colon = rest.lastIndexOf(':');
  if (colon <= 0) return undefined;
  return { model: decodeURIComponent(rest.slice(0, colon)), method: rest.slice(colon + 1) };
}

/** The key may come as `x-goog-api-key` or `?key=`, as the real API accepts both. */
function authorized(req: SimRequest, res: ServerResponse): boolean {
  const key = header(req.headers, 'x-goog-api-key') ?? req.query.get('key') ?? undefined;
  if (key === undefined || key === '' || isRejectedKey(key)) {
    sendError(res, geminiError(400, 'API key not valid. Please pass a valid API key.', BAD_KEY_DETAILS));
    return false;
  }
  return true;
}

export const handleGemini: Handler = async (req, res, env) => {
  const target = parseModelPath(req.path);
  if (target === undefined) {
    sendError(res, geminiError(404, `Method not found: ${req.path}`));
    return;
  }
  if (!authorized(req, res)) return;
  await serveGemini(req, res, env, target);
};

/** A Gemini model call once its caller is authorized (by API key here, by OAuth token on Vertex AI). */
export async function serveGemini(req: SimRequest, res: ServerResponse, env: SimEnv, target: { model: string; method: string }): Promise<void> {
  const body = parseJsonObject(req.body);
  if (body === undefined) {
    sendError(res, geminiError(400, 'Invalid JSON payload received.'));
    return;
  }
  const { model, method } = target;
  if (model.startsWith('unknown-')) {
    const message = `models/${model} is not found for API version v1beta, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`;
    sendError(res, geminiError(404, message));
    return;
  }
  const how = { stream: method === 'streamGenerateContent', sse: req.query.get('alt') === 'sse' };
  if (method === 'generateContent' || how.stream) {
    if (isLyriaModel(model)) await handleLyria(req, res, env, { model, body, how });
    else await generate(req, res, env.nextId(), { model, body, how });
  } else if (method === 'embedContent' || method === 'batchEmbedContents') {
    await embed(req, res, model, body, method === 'batchEmbedContents');
  } else if (method === 'predict') {
    await predictImages(req, res, model, body);
  } else if (method === 'countTokens') {
    sendJson(res, 200, { totalTokens: promptInfo(asObject(body['generateContentRequest']) ?? body).tokens });
  } else {
    sendError(res, geminiError(404, `Method not found: ${method}`));
  }
}

interface GenerateCall {
  readonly model: string;
  readonly body: JsonObject;
  readonly how: { readonly stream: boolean; readonly sse: boolean };
}

const partsOf = (content: unknown): JsonObject[] => (asArray(asObject(content)?.['parts']) ?? []).map(asObject).filter((p): p is JsonObject => p !== undefined);
const countOf = (content: unknown, key: string): number => partsOf(content).filter((p) => p[key] !== undefined).length;

/** As the API: a turn of function responses answers every call of the model turn before it, no more, no less. */
function unmatchedResponses(contents: readonly unknown[]): boolean {
  return contents.some((c, i) => {
    const answers = countOf(c, 'functionResponse');
    return answers > 0 && answers !== countOf(contents[i - 1], 'functionCall');
  });
}

/** Function calls for a request that declares functions (none once the last turn answers them). */
function geminiCalls(body: JsonObject, d: SimRequest['directives']): PlannedCall[] {
  const tools = (asArray(body['tools']) ?? []).flatMap((t) => asArray(asObject(t)?.['functionDeclarations']) ?? []).flatMap((f) => {
    const name = asString(asObject(f)?.['name']);
    return name === undefined ? [] : [{ name, schema: asObject(f)?.['parametersJsonSchema'] ?? asObject(f)?.['parameters'] }];
  });
  const fc = asObject(asObject(body['toolConfig'])?.['functionCallingConfig']);
  const allowed = asArray(fc?.['allowedFunctionNames']);
  const contents = asArray(body['contents']) ?? [];
  return plannedCalls(tools, {
    choiceNone: fc?.['mode'] === 'NONE', named: allowed?.length === 1 ? asString(allowed[0]) : undefined,
    answeredTools: countOf(contents[contents.length - 1], 'functionResponse') > 0, d,
  });
}

/** The reply's parts as stream chunks: function calls (each whole, in one chunk), JSON text in pieces, or the planned words. */
function replyParts(body: JsonObject, d: SimRequest['directives'], maxOut: number | undefined): { chunks: JsonObject[][]; capped: boolean; tokens: number } {
  const calls = geminiCalls(body, d);
  if (calls.length > 0) return { chunks: [calls.map((c) => ({ functionCall: { name: c.name, args: c.args } }))], capped: false, tokens: calls.reduce((n, c) => n + textTokens(c.arguments), 0) };
  const config = asObject(body['generationConfig']);
  if (config?.['responseMimeType'] === 'application/json') {
    const text = jsonReply(config['responseJsonSchema'] ?? config['responseSchema']);
    const parts = pieces(text, Math.ceil(text.length / 4));
    return { chunks: parts.map((t) => [{ text: t }]), capped: false, tokens: parts.length };
  }
  const plan = planReply(d, maxOut);
  return { chunks: (plan.pieces.length > 0 ? plan.pieces : ['']).map((t) => [{ text: t }]), capped: plan.capped, tokens: plan.pieces.length };
}

async function generate(req: SimRequest, res: ServerResponse, seq: string, call: GenerateCall): Promise<void> {
  const d = req.directives;
  if (unmatchedResponses(asArray(call.body['contents']) ?? [])) {
    sendError(res, geminiError(400, 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.'));
    return;
  }
  if (await applyFaults(res, d, geminiErrorShape, call.how.stream)) return;
  const prompt = d.usage ?? promptInfo(call.body).tokens;
  const responseId = `sim${seq}`;
  if (d.safetyBlock || d.safetyFinish) {
    const only = d.safetyBlock
      ? blockedResponse(call.model, responseId, prompt)
      : safetyFinishResponse(call.model, responseId, prompt);
    await deliver(res, d, call.how, only, [only]);
    return;
  }
  const config = asObject(call.body['generationConfig']);
  const maxOut = asNumber(config?.['maxOutputTokens']);
  const reply = replyParts(call.body, d, maxOut);
  const finishReason = reply.capped ? 'MAX_TOKENS' : 'STOP';
  const thinking = thinkingOf(config);
  const thoughtParts: JsonObject[] = thinking?.show ? [{ text: thinking.plan.pieces.join(''), thought: true }] : [];
  const thoughts = thinking?.plan.tokens ?? 0;
  const merged = [...thoughtParts, ...mergeText(reply.chunks.flat())];
  const response = partsResponse(call.model, responseId, merged, finishReason, usageMetadata(prompt, reply.tokens, thoughts));
  const chunks = call.how.stream ? streamChunks(call.model, responseId, reply, finishReason, prompt, { parts: thoughtParts, tokens: thoughts }) : [];
  await deliver(res, d, call.how, response, chunks);
}

/**
 * The thinking a request asked for with `thinkingConfig` (not `thinkingBudget: 0`): its
 * tokens (thoughtsTokenCount), and a thought summary part when it sets `includeThoughts`.
 */
function thinkingOf(config: JsonObject | undefined): { plan: ThoughtPlan; show: boolean } | undefined {
  const tc = asObject(config?.['thinkingConfig']);
  if (tc === undefined || tc['thinkingBudget'] === 0) return undefined;
  return { plan: thoughtPlan(tc['thinkingLevel']), show: tc['includeThoughts'] === true };
}

/** Adjacent text parts joined, as a whole (non-streamed) reply has them. */
function mergeText(parts: readonly JsonObject[]): JsonObject[] {
  const out: JsonObject[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (typeof p['text'] === 'string' && last !== undefined && typeof last['text'] === 'string') out[out.length - 1] = { text: last['text'] + p['text'] };
    else out.push(p);
  }
  return out;
}

function partsResponse(model: string, responseId: string, parts: readonly JsonObject[], finishReason: string | undefined, usage: JsonObject): JsonObject {
  const candidate: JsonObject = { content: { parts, role: 'model' }, index: 0 };
  if (finishReason !== undefined) candidate['finishReason'] = finishReason;
  return { candidates: [candidate], usageMetadata: usage, modelVersion: model, responseId };
}

/**
 * One chunk of parts per event, the thought summary first when there is one; usage is
 * cumulative (all the thinking from the first, one candidate token a chunk, the rest on
 * the last) and the last carries finishReason.
 */
function streamChunks(model: string, responseId: string, reply: { chunks: JsonObject[][]; tokens: number }, finish: string, prompt: number, thought: { parts: JsonObject[]; tokens: number }): JsonObject[] {
  const head = thought.parts.length > 0 ? [partsResponse(model, responseId, thought.parts, undefined, usageMetadata(prompt, 0, thought.tokens))] : [];
  return [...head, ...reply.chunks.map((parts, i) => {
    const last = i === reply.chunks.length - 1;
    return partsResponse(model, responseId, parts, last ? finish : undefined, usageMetadata(prompt, last ? reply.tokens : Math.min(i + 1, reply.tokens), thought.tokens));
  })];
}

/** Imagen over `:predict`: `{instances: [{prompt}], parameters: {sampleCount}}` → one PNG prediction per sample. */
async function predictImages(req: SimRequest, res: ServerResponse, model: string, body: JsonObject): Promise<void> {
  const prompt = asString(asObject(asArray(body['instances'])?.[0])?.['prompt']);
  if (prompt === undefined || prompt === '') {
    sendError(res, geminiError(400, '* instances[0].prompt: a prompt is required'));
    return;
  }
  const count = Math.min(4, Math.max(1, Math.floor(asNumber(asObject(body['parameters'])?.['sampleCount']) ?? 4)));
  if (await applyFaults(res, req.directives, geminiErrorShape, false)) return;
  const predictions = Array.from({ length: count }, (_, i) => ({ bytesBase64Encoded: pngBytes(`${model}:${prompt}#${i}`).toString('base64'), mimeType: 'image/png' }));
  sendJson(res, 200, { predictions });
}

/** gemini-embedding-001 defaults to 3072 dimensions; the older models to 768. */
function nativeDims(model: string): number {
  return model === 'text-embedding-004' || model === 'embedding-001' ? 768 : 3072;
}

function embedOne(request: JsonObject, model: string): JsonObject | undefined {
  const content = asObject(request['content']);
  if (content === undefined) return undefined;
  const parts = asArray(content['parts']) ?? [];
  const text = parts.map((p) => asString(asObject(p)?.['text']) ?? '').join('\n');
  if (textChars(parts) === 0) return undefined;
  const wanted = asNumber(request['outputDimensionality']);
  const dims = wanted !== undefined && wanted >= 1 ? Math.min(Math.floor(wanted), 3072) : nativeDims(model);
  return { values: toFloatList(embedText(text, dims)) };
}

async function embed(req: SimRequest, res: ServerResponse, model: string, body: JsonObject, batch: boolean): Promise<void> {
  const requests = batch ? asArray(body['requests']) : [body];
  const embeddings = requests?.map((r) => embedOne(asObject(r) ?? {}, model));
  if (embeddings === undefined || embeddings.length === 0 || embeddings.some((e) => e === undefined)) {
    sendError(res, geminiError(400, '* EmbedContentRequest.content: contents is not specified'));
    return;
  }
  if (await applyFaults(res, req.directives, geminiErrorShape, false)) return;
  sendJson(res, 200, batch ? { embeddings } : { embedding: embeddings[0] });
}
