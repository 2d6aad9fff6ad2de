import { applyRequestTransform, type CacheDef, costPicos, fillPath, GatewayError, type GatewayPlugin, InvalidUsage, type Metered, microsToUsd, type ModalityHandler, type ModelRoute, picosToMicros, reportedTokens, type RespondContext, type ResponseCacheApi, type TextSlot, type UpstreamRequest } from '../../src/sdk.js';
import { checkEmbeddingRoute, inputCount, parseEmbeddingRequest, type EmbeddingRequest } from './validate.js';
import { encodeVector, estimateInputTokens, tokenBound, vectorList, type WireVector } from './vectors.js';

/** What the endpoint's YAML request transform sees (JSONata input). */
function transformInput(req: EmbeddingRequest, route: ModelRoute): Record<string, unknown> {
  return {
    model: route.model.upstreamId, input: req.body.input, texts: req.texts, tokens: req.tokens,
    dimensions: req.dimensions, encoding_format: req.encoding, user: req.body.user,
  };
}

/**
 * The upstream request. An endpoint with a `request` transform in YAML (Gemini's
 * batchEmbedContents) is built from it; otherwise the upstream speaks OpenAI's format
 * and gets the client's body with the provider's model id.
 */
async function buildEmbeddingUpstream(req: EmbeddingRequest, route: ModelRoute): Promise<UpstreamRequest> {
  const vars = { model: route.model.upstreamId };
  const built = await applyRequestTransform(route.endpoint.transforms.request, transformInput(req, route), 'input');
  if (!built) {
    return { path: fillPath(route.endpoint.path, vars), body: JSON.stringify({ ...req.body, model: route.model.upstreamId }), contentType: 'application/json' };
  }
  return {
    path: fillPath(route.endpoint.path, { ...vars, ...built.pathVars }),
    query: built.query,
    headers: built.headers,
    body: built.body,
    contentType: 'application/json',
  };
}

interface UpstreamEmbeddings {
  vectors: unknown[];
  promptTokens: number | undefined;
}

/** Vectors and token usage out of the upstream body: by the YAML `response` transform, or OpenAI's format. */
async function readEmbeddings(text: string, route: ModelRoute): Promise<UpstreamEmbeddings | undefined> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const extract = route.endpoint.transforms.response;
  if (extract) {
    const out = await extract(json);
    const vectors = vectorList(out.embeddings);
    return vectors && { vectors, promptTokens: reportedTokens(out.prompt_tokens, 'prompt_tokens') };
  }
  const body = json as { data?: Array<{ embedding?: unknown; index?: unknown }>; usage?: { prompt_tokens?: unknown } };
  if (!Array.isArray(body.data)) return undefined;
  const ordered = [...body.data].sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0));
  return { vectors: ordered.map((d) => d.embedding), promptTokens: reportedTokens(body.usage?.prompt_tokens, 'usage.prompt_tokens') };
}

async function respondEmbeddings(cache: ResponseCacheApi, ctx: RespondContext<EmbeddingRequest>): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  let got: UpstreamEmbeddings | undefined;
  try {
    got = await readEmbeddings(await upstream.body.text(), route);
  } catch (err) {
    if (err instanceof InvalidUsage) throw new GatewayError('upstream_error', [err.message]);
    throw err;
  }
  const data: Array<{ object: 'embedding'; embedding: WireVector; index: number }> = [];
  for (const [index, v] of (got?.vectors ?? []).entries()) {
    const embedding = encodeVector(v, parsed.encoding);
    if (embedding === undefined) break;
    data.push({ object: 'embedding', embedding, index });
  }
  if (!got || data.length !== inputCount(parsed)) throw new GatewayError('upstream_error', ['the upstream sent a malformed embeddings response']);
  // Token-array input is counted exactly; only text needs an estimate.
  const estimated = got.promptTokens === undefined && parsed.texts !== undefined;
  const promptTokens = got.promptTokens ?? (parsed.texts ? estimateInputTokens(parsed.texts) : tokenBound(undefined, parsed.tokens));
  // Rounded once: the figure the client sees is the one charged.
  const costMicros = picosToMicros(costPicos(route.model, { prompt: promptTokens }));
  if (cache.wants(ex)) cache.offer<StoredEmbeddings>(ex, { data, promptTokens });
  void reply.code(200).type('application/json').send(JSON.stringify({
    id: ex.id,
    object: 'list',
    data,
    model: parsed.model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, cost: microsToUsd(costMicros) },
  }));
  return { costMicros, estimated, usage: { input: promptTokens, output: 0, cachedInput: 0, reasoning: 0 } };
}

/** A stored embeddings reply (docs/cache.md): the vectors as encoded for the request, and the tokens billed. */
interface StoredEmbeddings {
  data: unknown[];
  promptTokens: number;
}

/** The cache's view of an embeddings request: everything but the model (the core adds it resolved) and `user`. */
const embeddingsCache: CacheDef<EmbeddingRequest, StoredEmbeddings> = {
  request: (req) => ({ key: Object.fromEntries(Object.entries(req.body).filter(([k]) => k !== 'model' && k !== 'user')) }),
  async replay(ctx, hit) {
    const { ex, parsed, reply } = ctx;
    const charged = hit.price(hit.entry.costMicros);
    const { data, promptTokens } = hit.entry.body;
    void reply.code(200).type('application/json').send(JSON.stringify({
      id: ex.id, object: 'list', data, model: parsed.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, cost: microsToUsd(charged) },
    }));
    return { costMicros: charged };
  },
};

const embeddingsHandler = (cache: ResponseCacheApi): ModalityHandler<EmbeddingRequest> => ({
  modality: 'embeddings',
  parse: (body) => parseEmbeddingRequest(body),
  texts: embeddingTexts,
  checkRoute: checkEmbeddingRoute,
  maxCostPicos: (req, route) => costPicos(route.model, { prompt: tokenBound(req.texts, req.tokens) }),
  maxTokens: (req) => tokenBound(req.texts, req.tokens),
  buildUpstream: buildEmbeddingUpstream,
  respond: (ctx) => respondEmbeddings(cache, ctx),
});

/** Text embeddings (`POST /v1/embeddings`, spec §4.4), OpenAI format in and out. */
export const embeddingsPlugin: GatewayPlugin = {
  name: 'embeddings',
  modalities: { embeddings: { requiredPricing: ['prompt'], dialects: [] } },
  register(api) {
    api.modelRoute({ method: 'POST', url: '/v1/embeddings', handler: api.cache.cached(embeddingsHandler(api.cache), embeddingsCache) });
  },
};

/** Each text input, for the guardrails: a mask rewrites both `texts` and the client's body that OpenAI-format upstreams get. */
function embeddingTexts(req: EmbeddingRequest): TextSlot[] {
  const texts = req.texts;
  if (!texts) return [];
  return texts.map((_, i) => ({
    get: () => texts[i] ?? '',
    set(text: string) {
      texts[i] = text;
      const input = req.body.input;
      if (Array.isArray(input)) input[i] = text;
      else req.body.input = text;
    },
  }));
}
