import { costPicos, type Exchange, fillPath, GatewayError, invalidField, logIdOf, type MediaRecord, type MediaStorage, type Metered, microsToUsd, type ModalityHandler, type ModelRoute, type ObjectStore, picosToMicros, type RespondContext, type Semaphore, type Store, upstreamJson } from '../../src/sdk.js';
import type { ImageFetcher, InlineImage } from './images.js';
import type { MusicSettings } from './settings.js';
import { parseMusicRequest, type MusicRequest } from './validate.js';

const DAY_MS = 86_400_000;
const MP3 = 'audio/mpeg';

export interface MusicDeps {
  settings: MusicSettings;
  /** Bounds how many finished tracks are held in memory at once. */
  deliveries: Semaphore;
  store: Store;
  objectStore: ObjectStore | undefined;
  images: ImageFetcher;
  now(): number;
  warn(msg: string, data: Record<string, unknown>): void;
}

/** What the provider YAML's response transform extracts from a music upstream's reply. */
interface Extracted {
  audio?: unknown;
  text?: unknown;
  blocked?: unknown;
}

/** The music path through the core pipeline: validate → reserve the flat price → one upstream call → store → reply. */
export function musicHandler(deps: MusicDeps): ModalityHandler<MusicRequest> {
  const resolved = new WeakMap<MusicRequest, Promise<InlineImage[]>>();
  return {
    modality: 'music',
    parse: (body) => parseMusicRequest(body, deps.settings.image_fetch.max_bytes),
    // Spec §7: a missing or invalid music model is a 400, whatever the model id names.
    unknownModel: (model) => new GatewayError('model_not_found', [model], { param: 'model', status: 400 }),
    checkRoute(req, route) {
      const limit = Number(route.model.perRequestLimits.reference_images ?? '0');
      if (req.images.length > limit) {
        throw invalidField('reference_images', limit === 0
          ? `${req.model} takes a text prompt only; reference images need a model that accepts them (e.g. tune-3-pro-preview)`
          : `${req.model} accepts at most ${limit} reference images`);
      }
    },
    maxCostPicos: (_req, route) => flatPrice(route),
    timeoutMs: () => deps.settings.timeout_ms,
    async buildUpstream(req, route) {
      // Downloads happen once, here: after the cheap checks and the credit reservation, before the only upstream call.
      let images = resolved.get(req);
      if (!images) {
        images = Promise.all(req.images.map((img) => (img.kind === 'inline' ? img : deps.images.fetch(img.url, img.param))));
        resolved.set(req, images);
      }
      const transform = route.endpoint.transforms.request;
      if (!transform) throw new Error(`music endpoint of ${route.provider.id} has no request transform`); // refused at load
      const built = await transform({
        model: route.model.upstreamId, prompt: req.prompt, instrumental: req.instrumental, lyrics: req.lyrics ?? null,
        images: (await images).map((i) => ({ mime_type: i.mimeType, data: i.data.toString('base64') })),
      });
      return {
        path: fillPath(route.endpoint.path, { model: route.model.upstreamId, ...built.pathVars }),
        query: built.query, headers: built.headers, body: built.body, contentType: 'application/json',
      };
    },
    respond: (ctx) => respondMusic(deps, ctx),
  };
}

function flatPrice(route: ModelRoute): bigint {
  return costPicos(route.model, { audio_music_per_generation: 1 });
}

async function respondMusic(deps: MusicDeps, ctx: RespondContext<MusicRequest>): Promise<Metered> {
  // The upstream body waits in its socket (backpressure) until a delivery slot is free.
  const release = await deps.deliveries.acquire();
  ctx.reply.raw.once('close', release);
  try {
    return await deliver(deps, ctx);
  } catch (err) {
    release();
    throw err;
  }
}

async function deliver(deps: MusicDeps, ctx: RespondContext<MusicRequest>): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const extracted = await extract(route, await upstream.body.text());
  if (typeof extracted.blocked === 'string' && extracted.blocked !== '') {
    throw new GatewayError('content_blocked', [`${extracted.blocked}; not charged`]);
  }
  const audioB64 = typeof extracted.audio === 'string' ? extracted.audio : '';
  const bytes = Buffer.from(audioB64, 'base64');
  if (bytes.length === 0) throw new GatewayError('upstream_error', ['the provider answered without audio; not charged']);
  // Rounded here once: the stored record and the client's usage show the figure charged.
  const costMicros = picosToMicros(flatPrice(route));
  const created = deps.now();
  const storage = await store(deps, ex, bytes);
  const record: MediaRecord = {
    id: logIdOf(ex.id), requestId: ex.id, orgId: ex.org?.id ?? '', modality: 'music', model: parsed.model,
    usedModel: route.model.upstreamId, usedProvider: route.provider.id, prompt: parsed.prompt,
    text: typeof extracted.text === 'string' ? extracted.text : '', storage: storage.kind, objectKey: storage.key ?? null,
    bytes: bytes.length, mimeType: MP3, costMicros, error: false, errorCode: null, createdAt: created,
    expiresAt: storage.kind === 's3' ? created + deps.settings.retention_days * DAY_MS : null, cleanedAt: null,
    meta: { response_format: parsed.responseFormat, instrumental: parsed.instrumental, reference_images: parsed.images.length },
  };
  // Written before the reply, so /content and the history know the track as soon as the POST returns.
  await deps.store.media.put(record);
  // The upstream's base64 is reused as it is when it is canonical: re-encoding a 4 MB track costs 5 MB more per request.
  const base64 = /^[A-Za-z0-9+/]*={0,2}$/.test(audioB64) ? audioB64 : bytes.toString('base64');
  void reply.code(200).type('application/json').send(responseJson(record, base64, deps.settings.retention_days));
  const extra = { ...(storage.error !== undefined ? { storage_error: storage.error } : {}), storage: storage.kind, bytes: bytes.length };
  return { costMicros, extra };
}

async function extract(route: ModelRoute, text: string): Promise<Extracted> {
  const json = upstreamJson(text, 'the provider sent a malformed response; not charged');
  const transform = route.endpoint.transforms.response;
  if (!transform) throw new Error(`music endpoint of ${route.provider.id} has no response transform`); // refused at load
  return (await transform(json)) as Extracted;
}

/**
 * Spec §3: S3 when configured and the org keeps media, `none` when the org keeps
 * nothing (bytes never uploaded), `inline` otherwise — and `inline` when the upload
 * fails, since the client still gets its track and the generation is still charged.
 */
async function store(deps: MusicDeps, ex: Exchange, bytes: Buffer): Promise<{ kind: MediaStorage; key?: string; error?: string }> {
  if (ex.org?.retention === 'none') return { kind: 'none' };
  if (!deps.objectStore) return { kind: 'inline' };
  const key = `music/${ex.org?.id ?? 'unknown'}/${ex.id}.mp3`;
  try {
    await deps.objectStore.put(key, bytes, MP3);
    return { kind: 's3', key };
  } catch (err) {
    deps.warn('music upload to object storage failed; returning the track inline', { reqId: ex.id, err: (err as Error).message });
    return { kind: 'inline', error: (err as Error).message };
  }
}

/** The §2.1 object. The base64 (megabytes) is spliced in as-is rather than copied through JSON.stringify. */
function responseJson(r: MediaRecord, base64: string, retentionDays: number): string {
  const audio: Record<string, unknown> = { base64: '\u0000', mime_type: r.mimeType, storage: r.storage };
  if (r.storage === 's3') Object.assign(audio, { url: `/v1/music/${r.requestId}/content`, expires_in_days: retentionDays });
  const body = JSON.stringify({
    id: r.requestId, object: 'music.generation', model: r.model, used_model: r.usedModel, used_provider: r.usedProvider,
    audio, text: r.text ?? '', usage: { cost_usd: microsToUsd(r.costMicros) }, created: Math.floor(r.createdAt / 1000),
  });
  const [head, tail] = body.split('"\\u0000"') as [string, string];
  return `${head}"${base64}"${tail}`;
}
