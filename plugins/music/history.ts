import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, invalidField, type MediaRecord, microsToUsd, type Store } from '../../src/sdk.js';

const DEFAULT_LIMIT = 30;
const MAX_LIMIT = 100;

/** `limit`: an integer 1–100, default 30; anything else is a 400 (not clamped), so a client bug shows. */
export function parseLimit(raw: unknown): number {
  if (raw === undefined || raw === '') return DEFAULT_LIMIT;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) throw invalidField('limit', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

/** Where a track's bytes are fetched: `/v1/music/<id>/content` with a bearer key, or the console's org route. */
export type ContentUrl = (requestId: string) => string;
const bearerUrl: ContentUrl = (id) => `/v1/music/${id}/content`;

/** One history item (spec §2.1). Hosted tracks carry their URL; swept ones `audio: null, expired: true`. */
export function historyItem(r: MediaRecord, contentUrl: ContentUrl = bearerUrl): Record<string, unknown> {
  const expired = r.cleanedAt !== null;
  let audio: Record<string, unknown> | null = null;
  if (!r.error && !expired) {
    audio = { mime_type: r.mimeType, storage: r.storage };
    if (r.storage === 's3') audio.url = contentUrl(r.requestId);
  }
  return {
    id: r.requestId,
    object: 'music.generation',
    model: r.model,
    prompt: r.prompt ?? '',
    created: Math.floor(r.createdAt / 1000),
    audio,
    usage: { cost_usd: microsToUsd(r.costMicros) },
    metadata: { used_model: r.usedModel ?? '', used_provider: r.usedProvider ?? '', response_format: String(r.meta?.response_format ?? 'mp3') },
    expired,
    error: r.error,
  };
}

/** `GET /v1/music` (the bearer's org) and the console's `GET /api/v1/orgs/:org/music`: the org's generations, newest first. */
export async function listHistory(store: Store, orgId: string | undefined, request: FastifyRequest, reply: FastifyReply, contentUrl?: ContentUrl): Promise<unknown> {
  if (!orgId) throw new GatewayError('missing_api_key');
  const limit = parseLimit((request.query as Record<string, unknown>).limit);
  const items = await store.media.list(orgId, 'music', limit);
  void reply.header('cache-control', 'no-store');
  return { object: 'list', data: items.map((r) => historyItem(r, contentUrl)) };
}
