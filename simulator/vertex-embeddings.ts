/**
 * Vertex AI text embeddings: `…/publishers/google/models/{model}:predict` with
 * `{instances: [{content, task_type?, title?}], parameters?: {outputDimensionality?, autoTruncate?}}`
 * → `{predictions: [{embeddings: {values, statistics: {token_count, truncated}}}]}`.
 * Checked as Vertex documents it: gemini-embedding-001 takes one instance per request,
 * the text-embedding models up to 250; an input over 2,048 tokens is cut (or refused
 * with autoTruncate false); outputDimensionality at most the model's size.
 */

import type { ServerResponse } from 'node:http';
import { geminiError, geminiErrorShape } from './gemini-wire.js';
import { applyFaults, sendError, sendJson, type SimRequest } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject } from './json.js';
import { textTokens } from './reply.js';
import { embedText, toFloatList } from './vectors.js';

interface EmbeddingModel {
  dims: number;
  maxInstances: number;
}

const MODELS: Record<string, EmbeddingModel> = {
  'gemini-embedding-001': { dims: 3072, maxInstances: 1 },
  'text-embedding-005': { dims: 768, maxInstances: 250 },
  'text-embedding-004': { dims: 768, maxInstances: 250 },
  'text-multilingual-embedding-002': { dims: 768, maxInstances: 250 },
};

const TASK_TYPES = new Set([
  'RETRIEVAL_QUERY', 'RETRIEVAL_DOCUMENT', 'SEMANTIC_SIMILARITY', 'CLASSIFICATION',
  'CLUSTERING', 'QUESTION_ANSWERING', 'FACT_VERIFICATION', 'CODE_RETRIEVAL_QUERY',
]);

/** Each input's token limit; longer inputs are cut to it unless autoTruncate is false. */
const MAX_INPUT_TOKENS = 2048;

/** Whether a Google-publisher model is an embedding model (its `predict` is embeddings, not Imagen). */
export const isEmbeddingModel = (model: string): boolean => model.includes('embedding');

export async function predictEmbeddings(req: SimRequest, res: ServerResponse, model: string, notFound: () => void): Promise<void> {
  const spec = MODELS[model];
  if (!spec) return notFound();
  const bad = (message: string): void => sendError(res, geminiError(400, message));
  const body = parseJsonObject(req.body);
  if (body === undefined) return bad('Invalid JSON payload received.');
  const instances = asArray(body['instances']);
  if (instances === undefined || instances.length === 0) return bad('instances: a non-empty list of instances is required.');
  if (instances.length > spec.maxInstances) {
    return bad(spec.maxInstances === 1
      ? `Unable to submit request because ${model} supports only one instance per request; got ${instances.length}.`
      : `Unable to submit request because the number of instances (${instances.length}) exceeds the limit of ${spec.maxInstances}.`);
  }
  const parameters = asObject(body['parameters']) ?? {};
  const wanted = parameters['outputDimensionality'];
  if (wanted !== undefined && (typeof wanted !== 'number' || !Number.isInteger(wanted) || wanted < 1 || wanted > spec.dims)) {
    return bad(`parameters.outputDimensionality must be an integer from 1 to ${spec.dims} for ${model}; got ${JSON.stringify(wanted)}.`);
  }
  const dims = typeof wanted === 'number' ? wanted : spec.dims;
  const autoTruncate = parameters['autoTruncate'] !== false;
  const predictions: unknown[] = [];
  let characters = 0;
  for (const [i, raw] of instances.entries()) {
    const instance = asObject(raw);
    const content = asString(instance?.['content']);
    if (content === undefined || content === '') return bad(`instances[${i}].content: a non-empty string is required.`);
    const task = instance?.['task_type'];
    if (task !== undefined && (typeof task !== 'string' || !TASK_TYPES.has(task))) return bad(`instances[${i}].task_type: unknown task type ${JSON.stringify(task)}.`);
    const tokens = textTokens(content);
    if (tokens > MAX_INPUT_TOKENS && !autoTruncate) {
      return bad(`instances[${i}]: the input has ${tokens} tokens, over the limit of ${MAX_INPUT_TOKENS}; set autoTruncate to cut it.`);
    }
    characters += content.length;
    predictions.push({
      embeddings: {
        values: toFloatList(embedText(content, dims)),
        statistics: { token_count: Math.min(tokens, MAX_INPUT_TOKENS), truncated: tokens > MAX_INPUT_TOKENS },
      },
    });
  }
  if (await applyFaults(res, req.directives, geminiErrorShape, false)) return;
  const usage = asNumber(req.directives.usage);
  if (usage !== undefined) {
    // [[sim:usage=N]]: the first prediction reports N tokens (a test's control over billing).
    const first = asObject(asObject(predictions[0])?.['embeddings']);
    if (first) first['statistics'] = { token_count: usage, truncated: false };
  }
  sendJson(res, 200, { predictions, metadata: { billableCharacterCount: characters } });
}
