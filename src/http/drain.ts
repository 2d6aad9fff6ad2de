import type { IncomingMessage } from 'node:http';
import type { FastifyReply } from 'fastify';

/** The most of a refused body the gateway reads (and throws away) so that its client can read the 413. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
/** How long it keeps reading a refused body before it closes the connection anyway. */
const DRAIN_MAX_MS = 30_000;

/**
 * A 413 sent while the client is still uploading. Closing the connection at once
 * (what fastify does) resets it under a client that writes its whole body before it
 * reads (Python's http.client, many SDKs): its write fails and it never sees the
 * answer. So the rest of the body is read and discarded, as nginx's lingering close
 * does, and the connection is kept for the next request. A body declared larger than
 * DRAIN_MAX_BYTES, or one still arriving after DRAIN_MAX_MS, is cut off instead.
 */
export function drainRefusedBody(request: IncomingMessage, reply: FastifyReply): void {
  if (request.complete || Number(request.headers['content-length']) > DRAIN_MAX_BYTES) return;
  void reply.removeHeader('connection');
  let drained = 0;
  const cutOff = (): void => {
    request.socket.destroy();
  };
  const timer = setTimeout(cutOff, DRAIN_MAX_MS);
  timer.unref();
  request.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_MAX_BYTES) cutOff();
  });
  request.once('close', () => clearTimeout(timer));
  request.resume();
}
