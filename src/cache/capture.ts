import type { UpstreamBody } from '../pipeline/upstream-body.js';

/** A copy of an upstream body as the plugin reads it, to store the reply once it was delivered. */
export interface CapturedBody {
  /** The body to read instead of the upstream's: the same bytes, in the same reads. */
  body: UpstreamBody;
  /** Everything read, or undefined when it went past the cap, broke, or was not read whole: not stored then. */
  bytes(): Buffer | undefined;
}

/**
 * Tees an upstream body into memory as it is read (up to `cap` bytes; past it the copy is
 * dropped and the reply is not stored). The tee is an UpstreamBody itself: reading it
 * (`for await`, `text()`) reads the upstream's, and what it does not read (`dump()`,
 * `destroy()`) leaves no copy.
 */
export function captureBody(body: UpstreamBody, cap: number): CapturedBody {
  const tee = new TeeBody(body, cap);
  return { body: tee, bytes: () => tee.bytes() };
}

class TeeBody implements UpstreamBody, AsyncIterator<Buffer> {
  private chunks: Buffer[] = [];
  private size = 0;
  private over = false;
  private source: AsyncIterator<Buffer> | undefined;

  constructor(private readonly body: UpstreamBody, private readonly cap: number) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    this.source ??= this.body[Symbol.asyncIterator]();
    let r: IteratorResult<Buffer>;
    try {
      r = await this.source.next();
    } catch (err) {
      this.giveUp(); // a body that broke is not a reply to store, whatever the plugin makes of it
      throw err;
    }
    if (r.done !== true) this.keep(r.value);
    return r;
  }

  return(): Promise<IteratorResult<Buffer>> {
    this.giveUp();
    this.source ??= this.body[Symbol.asyncIterator]();
    return this.source.return?.() ?? Promise.resolve({ done: true, value: undefined });
  }

  async text(): Promise<string> {
    const parts: Buffer[] = [];
    for (let r = await this.next(); r.done !== true; r = await this.next()) parts.push(r.value);
    return Buffer.concat(parts).toString('utf8');
  }

  dump(): Promise<void> {
    this.giveUp();
    return this.body.dump();
  }

  firstByte(timeoutMs: number, signal: AbortSignal, limitMs?: number): Promise<void> {
    return this.body.firstByte(timeoutMs, signal, limitMs);
  }

  destroy(err?: Error): void {
    this.giveUp();
    this.body.destroy(err);
  }

  onClose(fn: () => void): void {
    this.body.onClose(fn);
  }

  bytes(): Buffer | undefined {
    return this.over ? undefined : Buffer.concat(this.chunks);
  }

  private keep(chunk: Buffer): void {
    if (this.over) return;
    this.size += chunk.length;
    if (this.size > this.cap) this.giveUp();
    else this.chunks.push(chunk);
  }

  private giveUp(): void {
    this.over = true;
    this.chunks = [];
  }
}
