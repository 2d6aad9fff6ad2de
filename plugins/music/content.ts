import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Exchange, GatewayError, type ObjectStore, parseRange, type Store } from '../../src/sdk.js';
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
export async function serveContent(deps: ContentDeps, ex: Exchange, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { id } = request.params as { id: string };
  const record = await deps.store.media.get(id);
  if (!record || record.orgId !== ex.org?.id || record.modality !== 'music') throw new GatewayError('not_found', [`No music track ${id}`]);
  if (record.cleanedAt !== null) throw new GatewayError('gone', [`Track ${id} was deleted by the ${deps.settings.retention_days}-day retention sweep`]);
  if (record.error || record.storage !== 's3' || !record.objectKey || !deps.objectStore) {
    throw new GatewayError('not_found', [`Track ${id} is not hosted (storage: ${record.storage}); use audio.base64 from the generation reply`]);
  }
  void reply.header('cache-control', 'private, no-store');
  if (deps.settings.delivery === 'redirect') {
    return reply.redirect(await deps.objectStore.presignGet(record.objectKey, deps.settings.presign_ttl_seconds), 302);
  }
  const range = parseRange(request.headers.range, record.bytes);
  if (range === 'unsatisfiable') {
    throw new GatewayError('range_not_satisfiable', [`Range ${request.headers.range} is outside the ${record.bytes}-byte track`], {
      headers: { 'content-range': `bytes */${record.bytes}` },
    });
  }
  let body;
  try {
    body = await deps.objectStore.get(record.objectKey, range);
  } catch (err) {
    if ((err as { name?: string }).name === 'NoSuchKey') throw new GatewayError('gone', [`Track ${id} is no longer in storage`]);
    throw new GatewayError('upstream_error', [`object storage failed: ${(err as Error).message}`]);
  }
  void reply.header('accept-ranges', 'bytes').header('content-type', record.mimeType).header('content-length', String(body.length));
  if (range) void reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${record.bytes}`);
  return reply.send(body.stream);
}
