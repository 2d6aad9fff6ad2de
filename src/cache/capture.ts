import { Readable } from 'node:stream';
import type { UpstreamResponse } from '../pipeline/upstream.js';

/** A copy of an upstream body as the plugin reads it, to store the reply once it was delivered. */
export interface CapturedBody {
  /** The body to read instead of the upstream's: the same bytes, in the same reads. */
  body: UpstreamResponse['body'];
  /** Everything read, or undefined when it went past the cap (not stored then). */
  bytes(): Buffer | undefined;
}

/**
 * Tees an upstream body into memory as it is read (up to `cap` bytes; past it the copy is
 * dropped and the reply is not stored). The copy has the body's `text()` too.
 */
export function captureBody(body: UpstreamResponse['body'], cap: number): CapturedBody {
  let chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  async function* copy(): AsyncGenerator<Buffer> {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      if (!over) {
        size += buf.length;
        if (size > cap) {
          over = true;
          chunks = [];
        } else chunks.push(buf);
      }
      yield buf;
    }
  }
  const readable = Readable.from(copy(), { objectMode: false });
  const text = async (): Promise<string> => {
    const parts: Buffer[] = [];
    for await (const c of readable) parts.push(c as Buffer);
    return Buffer.concat(parts).toString('utf8');
  };
  return {
    body: Object.assign(readable, { text }) as unknown as UpstreamResponse['body'],
    bytes: () => (over ? undefined : Buffer.concat(chunks)),
  };
}
