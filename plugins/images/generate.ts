import type { FastifyRequest } from 'fastify';
import {
  applyRequestTransform, costPicos, fillPath, GatewayError, invalidField, logIdOf, type MediaRecord, type Metered, microsToUsd, type ModalityHandler,
  type ModelRoute, type ObjectStore, picosToMicros, type RespondContext, type Store, upstreamJson, upstreamText,
} from '../../src/sdk.js';
import type { ImagesSettings } from './settings.js';
import { checkImageRoute, type ImageRequest, parseImageRequest, pricedPerToken, variantOf } from './validate.js';

const HOUR_MS = 3_600_000;

export interface ImageDeps {
  settings: ImagesSettings;
  store: Store;
  objectStore: ObjectStore | undefined;
  now(): number;
}

/** OpenAI images usage (gpt-image-1). */
interface ImageUsage { input_tokens?: number; output_tokens?: number; total_tokens?: number }

/** What an upstream reply gave: the images' bytes (base64), the provider's own extra fields, its usage. */
interface Produced {
  images: string[];
  extra: Record<string, unknown>;
  revised: Array<string | undefined>;
  usage: ImageUsage | undefined;
}

/** The most a request can cost: per token, the prompt bound and n images at the model's most output tokens; per image, n at the variant's price. */
function maxCost(req: ImageRequest, route: ModelRoute): bigint {
  if (pricedPerToken(route)) {
    const perImage = route.model.maxOutputTokens ?? 6240;
    return costPicos(route.model, { prompt: Buffer.byteLength(req.prompt) + 3, completion: req.n * perImage });
  }
  return costPicos(route.model, { image: req.n }, { variant: variantOf(req) });
}

/** Does the reply host the images (a `url`)? Asked for explicitly, or by default for a model whose default is url (DALL·E) when hosting is possible. */
function wantsUrl(req: ImageRequest, route: ModelRoute, hostable: boolean): boolean {
  if (req.responseFormat === 'url') return true;
  return req.responseFormat === undefined && hostable && route.model.supportedParameters.includes('response_format');
}

/** `POST /v1/images/generations` through the core pipeline: validate, reserve the most it can cost, one upstream call, bill what the provider billed. */
export function imagesHandler(deps: ImageDeps): ModalityHandler<ImageRequest> {
  return {
    modality: 'image',
    parse(body, request) {
      const req = parseImageRequest(body);
      if (req.responseFormat === 'url' && !deps.objectStore) throw invalidField('response_format', 'url responses need object storage (storage.s3 in gateway.yaml); ask for b64_json');
      if (req.responseFormat === 'url' && request.exchange.org?.retention === 'none') {
        throw invalidField('response_format', 'url responses are off for an organization whose retention is none; ask for b64_json');
      }
      return req;
    },
    checkRoute: checkImageRoute,
    maxCostPicos: maxCost,
    // The prompt, for the guardrails: both the transform's and the OpenAI body's.
    texts: (req) => [{ get: () => req.prompt, set: (text) => { req.prompt = text; req.body.prompt = text; } }],
    async buildUpstream(req, route) {
      const input = { model: route.model.upstreamId, prompt: req.prompt, n: req.n, size: req.size ?? null, quality: req.quality ?? null };
      const built = await applyRequestTransform(route.endpoint.transforms.request, input, 'size');
      if (built) {
        return { path: fillPath(route.endpoint.path, { model: route.model.upstreamId, ...built.pathVars }), query: built.query, headers: built.headers, body: built.body, contentType: 'application/json' };
      }
      // OpenAI's format: the client's body, the provider's model id, and the bytes always (the gateway hosts url replies itself).
      const { response_format: _rf, ...rest } = req.body;
      const body = { ...rest, model: route.model.upstreamId, ...(route.model.supportedParameters.includes('response_format') ? { response_format: 'b64_json' } : {}) };
      return { path: fillPath(route.endpoint.path, { model: route.model.upstreamId }), body: JSON.stringify(body), contentType: 'application/json' };
    },
    respond: (ctx) => respondImages(deps, ctx),
  };
}

async function produced(route: ModelRoute, text: string): Promise<Produced> {
  const json = upstreamJson(text, 'the upstream sent a malformed response');
  const extract = route.endpoint.transforms.response;
  if (extract) {
    const got = await extract(json);
    if (typeof got.blocked === 'string' && got.blocked) throw new GatewayError('content_blocked', [got.blocked]);
    const images = Array.isArray(got.images) ? got.images.filter((i): i is string => typeof i === 'string') : [];
    return { images, extra: {}, revised: [], usage: undefined };
  }
  const r = json as { data?: Array<{ b64_json?: unknown; revised_prompt?: unknown }>; usage?: ImageUsage } & Record<string, unknown>;
  const data = Array.isArray(r.data) ? r.data : [];
  const images = data.map((d) => (typeof d.b64_json === 'string' ? d.b64_json : '')).filter(Boolean);
  const { data: _d, usage: _u, created: _c, ...extra } = r;
  return { images, extra, revised: data.map((d) => (typeof d.revised_prompt === 'string' ? d.revised_prompt : undefined)), usage: r.usage };
}

/** What the images cost: the provider's token counts at the model's token prices, or the images at the variant's price. */
function meter(req: ImageRequest, route: ModelRoute, p: Produced): { picos: bigint; estimated: boolean } {
  if (!pricedPerToken(route)) return { picos: costPicos(route.model, { image: p.images.length }, { variant: variantOf(req) }), estimated: false };
  if (typeof p.usage?.input_tokens === 'number' && typeof p.usage.output_tokens === 'number') {
    return { picos: costPicos(route.model, { prompt: p.usage.input_tokens, completion: p.usage.output_tokens }), estimated: false };
  }
  return { picos: maxCost({ ...req, n: p.images.length }, route), estimated: true };
}

function mimeOf(bytes: Buffer): string {
  if (bytes[0] === 0x89 && bytes[1] === 0x50) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'image/jpeg';
  if (bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return 'application/octet-stream';
}

/** Uploads each image and records it, so `GET /v1/images/{id}/content` serves it to the org until it expires. */
async function host(deps: ImageDeps, ctx: RespondContext<ImageRequest>, images: string[], costMicros: number): Promise<string[]> {
  const { ex, route, request } = ctx;
  const objects = deps.objectStore as ObjectStore;
  const base = `${request.protocol}://${(request as FastifyRequest & { host?: string }).host ?? request.headers.host ?? 'localhost'}`;
  const expiresAt = deps.now() + deps.settings.url_retention_hours * HOUR_MS;
  return Promise.all(images.map(async (b64, i) => {
    const bytes = Buffer.from(b64, 'base64');
    const requestId = `${ex.id}_${i}`;
    const mimeType = mimeOf(bytes);
    const key = `images/${ex.org?.id ?? 'none'}/${requestId}.${mimeType.split('/')[1] ?? 'bin'}`;
    await objects.put(key, bytes, mimeType);
    const record: MediaRecord = {
      id: logIdOf(requestId), requestId, orgId: ex.org?.id ?? '', modality: 'image', model: ctx.parsed.model, usedModel: route.model.upstreamId,
      usedProvider: route.provider.id, prompt: ctx.parsed.prompt, text: null, storage: 's3', objectKey: key, bytes: bytes.length, mimeType,
      costMicros: i === 0 ? costMicros : 0, error: false, errorCode: null, createdAt: ex.startedAt, expiresAt, cleanedAt: null, meta: { index: i },
    };
    await deps.store.media.put(record);
    return `${base}/v1/images/${record.id}/content`;
  }));
}

async function respondImages(deps: ImageDeps, ctx: RespondContext<ImageRequest>): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const p = await produced(route, await upstreamText(upstream, ex.abort.signal));
  if (p.images.length === 0) throw new GatewayError('upstream_error', ['the upstream returned no image']);
  const { picos, estimated } = meter(parsed, route, p);
  // Rounded here once: the hosted records and the client's usage show the figure charged.
  const costMicros = picosToMicros(picos);
  const hostable = deps.objectStore !== undefined && ex.org?.retention !== 'none';
  const urls = wantsUrl(parsed, route, hostable) ? await host(deps, ctx, p.images, costMicros) : undefined;
  const data = p.images.map((b64, i) => ({ ...(urls ? { url: urls[i] } : { b64_json: b64 }), ...(p.revised[i] ? { revised_prompt: p.revised[i] } : {}) }));
  const usage = { ...p.usage, images: p.images.length, cost_usd_total: microsToUsd(costMicros) };
  void reply.code(200).type('application/json').send(JSON.stringify({ created: Math.floor(ex.startedAt / 1000), data, ...p.extra, usage }));
  return { costMicros, estimated, extra: { images: p.images.length, ...(p.usage ? { usage: p.usage } : {}), ...(urls ? { hosted: true } : {}) } };
}
