import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Exchange, GatewayError, type ObjectBody, type ObjectStore, type Store } from '../../src/sdk.js';

/**
 * `GET /v1/images/{id}/content`: a hosted image (a `url` reply) of the bearer's org.
 * Another org's or an unknown id is 404 (never 403, which would confirm the id); an
 * image the retention sweep deleted is 410.
 */
export async function serveImage(deps: { store: Store; objectStore: ObjectStore | undefined }, ex: Exchange, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { id } = request.params as { id: string };
  const record = await deps.store.media.get(id);
  if (!record || record.orgId !== ex.org?.id || record.modality !== 'image') throw new GatewayError('not_found', [`No image ${id}`]);
  if (record.cleanedAt !== null) throw new GatewayError('gone', [`Image ${id} was deleted when its hosting period ended`]);
  if (!record.objectKey || !deps.objectStore) throw new GatewayError('not_found', [`Image ${id} is not hosted`]);
  let body: ObjectBody;
  try {
    body = await deps.objectStore.get(record.objectKey);
  } catch (err) {
    if ((err as { name?: string }).name === 'NoSuchKey') throw new GatewayError('gone', [`Image ${id} is no longer in storage`]);
    throw new GatewayError('upstream_error', [`object storage failed: ${(err as Error).message}`]);
  }
  void reply.header('cache-control', 'private, max-age=3600').header('content-type', record.mimeType).header('content-length', String(body.length));
  return reply.send(body.stream);
}
