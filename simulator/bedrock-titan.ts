/**
 * InvokeModel for Amazon Titan Text Embeddings V2 (`amazon.titan-embed-text-v2:0`), as
 * Bedrock documents it: body `{inputText, dimensions?, normalize?, embeddingTypes?}`, one
 * text per call; reply `{embedding, inputTextTokenCount, embeddingsByType}`. What Bedrock
 * refuses (no inputText, dimensions other than 1024/512/256, an unknown key) is a
 * ValidationException. Tokens are counted as for every simulated embedding: ceil(chars/4).
 */

import type { ServerResponse } from 'node:http';
import type { AwsFault } from './aws-sigv4.js';
import type { Directives } from './directives.js';
import { sendJson } from './http.js';
import type { JsonObject } from './json.js';
import { textTokens } from './reply.js';
import { embedText, toFloatList } from './vectors.js';

const KEYS = new Set(['inputText', 'dimensions', 'normalize', 'embeddingTypes']);
const DIMENSIONS = [1024, 512, 256];

export function isTitanEmbedModel(model: string): boolean {
  return model.startsWith('amazon.titan-embed-text-v2');
}

const invalid = (message: string): AwsFault => ({ status: 400, type: 'ValidationException', message: `Malformed input request: ${message}, please reformat your input and try again.` });

/** Answers the call, or returns the ValidationException Bedrock would send. */
export function invokeTitanEmbed(res: ServerResponse, d: Directives, body: JsonObject): AwsFault | undefined {
  const extra = Object.keys(body).find((k) => !KEYS.has(k));
  if (extra !== undefined) return invalid(`#: extraneous key [${extra}] is not permitted`);
  const text = body['inputText'];
  if (typeof text !== 'string') return invalid('#: required key [inputText] not found');
  if (text.length === 0) return invalid('#/inputText: expected minLength: 1, actual: 0');
  const dims = body['dimensions'] ?? 1024;
  if (typeof dims !== 'number' || !DIMENSIONS.includes(dims)) return invalid(`#/dimensions: ${String(dims)} is not a valid enum value`);
  if (body['normalize'] !== undefined && typeof body['normalize'] !== 'boolean') return invalid('#/normalize: expected type: Boolean');
  // The simulated vectors are unit vectors; without normalization they are scaled, as a raw model output would not be of length 1.
  const unit = toFloatList(embedText(text, dims));
  const embedding = body['normalize'] === false ? unit.map((x) => Math.round(x * 3e8) / 1e8) : unit;
  sendJson(res, 200, { embedding, inputTextTokenCount: d.usage ?? textTokens(text), embeddingsByType: { float: embedding } });
  return undefined;
}
