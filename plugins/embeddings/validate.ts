import { invalidField, type ModelRequest, type ModelRoute } from '../../src/sdk.js';

export type EncodingFormat = 'float' | 'base64';

/**
 * A validated embeddings request. `input` is either text (`texts`) or pre-tokenized
 * input (`tokens`, OpenAI's token-array forms); exactly one of the two is set.
 */
export interface EmbeddingRequest extends ModelRequest {
  /** The client's body, passed on as-is to OpenAI-format upstreams (model replaced). */
  body: Record<string, unknown>;
  texts: string[] | undefined;
  tokens: number[][] | undefined;
  encoding: EncodingFormat;
  dimensions: number | undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isTokenArray = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'number' && Number.isInteger(t) && t >= 0);

/**
 * Validates an OpenAI embeddings request (spec §4.4). `input` may be a string, an
 * array of strings, an array of token ids, or an array of token-id arrays; an empty
 * string or array is refused, as OpenAI refuses it.
 */
export function parseEmbeddingRequest(body: unknown): EmbeddingRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const { model, input, encoding_format: encoding, dimensions } = body;
  if (typeof model !== 'string' || model.length === 0) throw invalidField('model', 'model is required and must be a non-empty string');
  const { texts, tokens } = parseInput(input);
  if (encoding !== undefined && encoding !== null && encoding !== 'float' && encoding !== 'base64') {
    throw invalidField('encoding_format', 'encoding_format must be "float" or "base64"');
  }
  if (dimensions !== undefined && dimensions !== null && (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1)) {
    throw invalidField('dimensions', 'dimensions must be an integer greater than 0');
  }
  return {
    model,
    body,
    texts,
    tokens,
    encoding: encoding === 'base64' ? 'base64' : 'float',
    dimensions: typeof dimensions === 'number' ? dimensions : undefined,
    prompt: texts?.join('\n'),
  };
}

function parseInput(input: unknown): { texts: string[] | undefined; tokens: number[][] | undefined } {
  if (typeof input === 'string') {
    if (input.length === 0) throw invalidField('input', 'input must not be empty');
    return { texts: [input], tokens: undefined };
  }
  if (!Array.isArray(input)) throw invalidField('input', 'input is required: a string, an array of strings, or an array of token arrays');
  if (input.length === 0) throw invalidField('input', 'input must not be an empty array');
  if (input.every((x) => typeof x === 'string')) {
    const empty = input.findIndex((x) => x.length === 0);
    if (empty >= 0) throw invalidField(`input[${empty}]`, `input[${empty}] must not be empty`);
    return { texts: input, tokens: undefined };
  }
  if (isTokenArray(input)) return { texts: undefined, tokens: [input] };
  const bad = input.findIndex((x) => !isTokenArray(x));
  if (bad >= 0) throw invalidField(`input[${bad}]`, 'input must be a string, an array of strings, an array of token ids or an array of non-empty token-id arrays');
  return { texts: undefined, tokens: input as number[][] };
}

/** How many separate inputs the request embeds. */
export function inputCount(req: EmbeddingRequest): number {
  return req.texts?.length ?? req.tokens?.length ?? 0;
}

/**
 * Rules of the chosen model, from its YAML: `per_request_limits.max_inputs` (the
 * upstream's batch limit), `supported_parameters` must list `dimensions` for a model
 * that can shorten its vectors, and `per_request_limits.max_dimensions` caps them.
 */
export function checkEmbeddingRoute(req: EmbeddingRequest, route: ModelRoute): void {
  const { model } = route;
  const maxInputs = Number(model.perRequestLimits.max_inputs ?? Number.POSITIVE_INFINITY);
  if (inputCount(req) > maxInputs) {
    throw invalidField('input', `${model.id} embeds at most ${maxInputs} inputs per request; got ${inputCount(req)}`);
  }
  if (req.dimensions === undefined) return;
  if (!model.supportedParameters.includes('dimensions')) {
    throw invalidField('dimensions', `${model.id} cannot shorten its embeddings; omit dimensions`);
  }
  const maxDims = Number(model.perRequestLimits.max_dimensions ?? Number.POSITIVE_INFINITY);
  if (req.dimensions > maxDims) throw invalidField('dimensions', `${model.id} has at most ${maxDims} dimensions; got ${req.dimensions}`);
}
