import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, type MediaRecord, type ObjectBody, type ObjectStore, parseRange, type Store } from '../../src/sdk.js';
import type { MusicSettings } from './settings.js';

export interface ContentDeps {
  store: Store;
  objectStore: ObjectStore | undefined;
  settings: MusicSettings;
}

/**
 * `GET /v1/music/:id/content` (spec §4.3): the hosted MP3 of one of the bearer's
 * tracks, by request id or log id. Another org's or an unknown id is 404 (never 403,
 * which would confirm the id exists); a swept track is 410. Proxied with Range support,
 * or a 302 to a short-lived presigned URL (the store then serves Range itself).
 */
export async function serveContent(deps: ContentDeps, orgId: string | undefined, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { id } = request.params as { id: string };
  const { record, objectKey, objects } = hostedTrack(await deps.store.media.get(id), id, orgId, deps.settings.retention_days, deps.objectStore);
  void reply.header('cache-control', 'private, no-store');
  if (deps.settings.delivery === 'redirect') {
    return reply.redirect(await objects.presignGet(objectKey, deps.settings.presign_ttl_seconds), 302);
  }
  const range = parseRange(request.headers.range, record.bytes);
  if (range === 'unsatisfiable') {
    throw new GatewayError('range_not_satisfiable', [`Range ${request.headers.range} is outside the ${record.bytes}-byte track`], {
      headers: { 'content-range': `bytes */${record.bytes}` },
    });
  }
  let body: ObjectBody;
  try {
    body = await objects.get(objectKey, range);
  } catch (err) {
    if ((err as { name?: string }).name === 'NoSuchKey') throw new GatewayError('gone', [`Track ${id} is no longer in storage`]);
    throw new GatewayError('upstream_error', [`object storage failed: ${(err as Error).message}`]);
  }
  void reply.header('accept-ranges', 'bytes').header('content-type', record.mimeType).header('content-length', String(body.length));
  if (range) void reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${record.bytes}`);
  return reply.send(body.stream);
}

/**
 * The org's hosted track named `id`, or the error its client gets: another org's, an
 * unknown or a non-music id is 404 (never 403, which would confirm the id exists), a
 * swept track 410, a track that was never hosted (or no object storage) 404.
 */
export function hostedTrack<S>(
  record: MediaRecord | undefined, id: string, orgId: string | undefined, retentionDays: number, objectStore: S | undefined,
): { record: MediaRecord; objectKey: string; objects: S } {
  if (!record || record.orgId !== orgId || record.modality !== 'music') throw new GatewayError('not_found', [`No music track ${id}`]);
  if (record.cleanedAt !== null) throw new GatewayError('gone', [`Track ${id} was deleted by the ${retentionDays}-day retention sweep`]);
  if (record.error || record.storage !== 's3' || !record.objectKey || objectStore === undefined) {
    throw new GatewayError('not_found', [`Track ${id} is not hosted (storage: ${record.storage}); use audio.base64 from the generation reply`]);
  }
  return { record, objectKey: record.objectKey, objects: objectStore };
}
