/**
 * Gemini API wire format under `…/v1beta/models/{model}:{method}`: generateContent,
 * streamGenerateContent (SSE or JSON array), embedContent, batchEmbedContents and
 * countTokens. Models named `lyria-3-*` are music models (lyria.ts).
 */

import type { ServerResponse } from 'node:http';
import { applyFaults, header, isRejectedKey, sendError, sendJson, type Handler, type SimRequest } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject, textChars, type JsonObject } from './json.js';
import {
  blockedResponse,
  deliver,
  geminiError,
  geminiErrorShape,
  promptInfo,
  safetyFinishResponse,
  usageMetadata,
} from './gemini-wire.js';
import { handleLyria, isLyriaModel } from './lyria.js';
import { planReply, type ReplyPlan } from './reply.js';
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
export function parseModelPath(path: string): { model: string; method: string } | undefined {
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
  } else if (method === 'countTokens') {
    sendJson(res, 200, { totalTokens: promptInfo(asObject(body['generateContentRequest']) ?? body).tokens });
  } else {
    sendError(res, geminiError(404, `Method not found: ${method}`));
  }
};

interface GenerateCall {
  readonly model: string;
  readonly body: JsonObject;
  readonly how: { readonly stream: boolean; readonly sse: boolean };
}

async function generate(req: SimRequest, res: ServerResponse, seq: string, call: GenerateCall): Promise<void> {
  const d = req.directives;
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
  const maxOut = asNumber(asObject(call.body['generationConfig'])?.['maxOutputTokens']);
  const plan = planReply(d, maxOut);
  const finishReason = plan.capped ? 'MAX_TOKENS' : 'STOP';
  const response = textResponse(call.model, responseId, plan.pieces.join(''), finishReason, usageMetadata(prompt, plan.pieces.length));
  const chunks = call.how.stream ? textChunks(call.model, responseId, plan, finishReason, prompt) : [];
  await deliver(res, d, call.how, response, chunks);
}

function textResponse(
  model: string,
  responseId: string,
  text: string,
  finishReason: string | undefined,
  usage: JsonObject,
): JsonObject {
  const candidate: JsonObject = { content: { parts: [{ text }], role: 'model' }, index: 0 };
  if (finishReason !== undefined) candidate['finishReason'] = finishReason;
  return { candidates: [candidate], usageMetadata: usage, modelVersion: model, responseId };
}

/** One word per chunk; usage is cumulative and the last chunk carries finishReason. */
function textChunks(model: string, responseId: string, plan: ReplyPlan, finish: string, prompt: number): JsonObject[] {
  const pieces = plan.pieces.length > 0 ? plan.pieces : [''];
  return pieces.map((piece, i) => {
    const last = i === pieces.length - 1;
    return textResponse(model, responseId, piece, last ? finish : undefined, usageMetadata(prompt, Math.min(i + 1, plan.pieces.length)));
  });
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
