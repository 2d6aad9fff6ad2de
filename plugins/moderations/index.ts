import {
  type CacheDef, costPicos, fillPath, GatewayError, invalidField, jsonTextSlots, type GatewayPlugin, type Metered, microsToUsd, type ModalityHandler,
  type ModelRequest, picosToMicros, type RespondContext, type ResponseCacheApi,
} from '../../src/sdk.js';

/** A validated `POST /v1/moderations` request. */
export interface ModerationRequest extends ModelRequest {
  body: Record<string, unknown>;
}

/** OpenAI's default when a request names no model. */
export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates a moderation request: `input` a string, strings, or text/image parts; `model` optional. Failures name the field (400). */
export function parseModerationRequest(body: unknown): ModerationRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const model = body.model ?? DEFAULT_MODERATION_MODEL;
  if (typeof model !== 'string' || model === '') throw invalidField('model', 'model must be a non-empty string');
  const input = body.input;
  const parts = Array.isArray(input) ? input : [input];
  if (parts.length === 0 || !parts.every((p) => (typeof p === 'string' && p !== '') || (isObject(p) && (p.type === 'text' || p.type === 'image_url')))) {
    throw invalidField('input', 'input must be a non-empty string, an array of strings, or an array of text and image_url parts');
  }
  const prompt = parts.map((p) => (typeof p === 'string' ? p : isObject(p) && typeof p.text === 'string' ? p.text : '')).filter(Boolean).join('\n');
  return { model, prompt, body };
}

/** The moderation path: one upstream call, the provider's reply as is (with the requested model and the cost), billed at the model's per-request price. */
const moderationHandler = (cache: ResponseCacheApi): ModalityHandler<ModerationRequest> => ({
  modality: 'moderation',
  parse: (body) => parseModerationRequest(body),
  texts: (req) => jsonTextSlots(req.body),
  maxCostPicos: (_req, route) => costPicos(route.model, { request: 1 }),
  buildUpstream: (req, route) => ({
    path: fillPath(route.endpoint.path, { model: route.model.upstreamId }),
    body: JSON.stringify({ ...req.body, model: route.model.upstreamId }),
    contentType: 'application/json',
  }),
  async respond(ctx: RespondContext<ModerationRequest>): Promise<Metered> {
    const { ex, parsed, route, upstream, reply } = ctx;
    let result: unknown;
    try {
      result = JSON.parse(await upstream.body.text());
    } catch {
      if (ex.abort.signal.aborted) throw new GatewayError('client_closed_request');
      throw new GatewayError('upstream_error', ['the upstream sent a malformed response']);
    }
    if (!isObject(result) || !Array.isArray(result.results)) throw new GatewayError('upstream_error', ['the upstream sent no moderation results']);
    const picos = costPicos(route.model, { request: 1 });
    // Rounded once: the figure the client sees is the one charged.
    const costMicros = picosToMicros(picos);
    if (cache.wants(ex)) cache.offer(ex, result);
    void reply.code(200).type('application/json').send(JSON.stringify({ ...result, model: parsed.model, usage: { cost_usd_total: microsToUsd(costMicros) } }));
    return { costMicros, extra: { flagged: result.results.some((r) => isObject(r) && r.flagged === true) } };
  },
});

/** The cache's view of a moderation request: its input and options, the model aside (the core adds it resolved); the stored reply is the provider's. */
const moderationCache: CacheDef<ModerationRequest, Record<string, unknown>> = {
  request: (req) => ({ key: Object.fromEntries(Object.entries(req.body).filter(([k]) => k !== 'model')) }),
  async replay({ parsed, reply }, hit) {
    const charged = hit.price(hit.entry.costMicros);
    const result = hit.entry.body;
    void reply.code(200).type('application/json').send(JSON.stringify({ ...result, model: parsed.model, usage: { cost_usd_total: microsToUsd(charged) } }));
    return { costMicros: charged, extra: { flagged: Array.isArray(result.results) && result.results.some((r) => isObject(r) && r.flagged === true) } };
  },
};

/**
 * Moderations (`POST /v1/moderations`, OpenAI's format), passed through to the
 * provider. OpenAI's moderation models are free: they are priced at 0 per request in
 * YAML, and every call is still logged (with whether anything was flagged).
 */
export const moderationsPlugin: GatewayPlugin = {
  name: 'moderations',
  modalities: { moderation: { requiredPricing: ['request'], dialects: [] } },
  register(api) {
    api.modelRoute({ method: 'POST', url: '/v1/moderations', handler: api.cache.cached(moderationHandler(api.cache), moderationCache) });
  },
};
