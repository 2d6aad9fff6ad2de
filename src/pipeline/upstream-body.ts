import { UpstreamFailure } from '../providers/upstream-failure.js';

/**
 * The body of an upstream reply, as plugins and the core read it: `text()` for a whole
 * reply, `for await` for a stream (each chunk as the upstream sent it), `dump()` for one
 * nobody needs, `destroy()` to stop it (the upstream request is cancelled). The core's
 * own body is a `QueuedBody`; the response cache reads one through a tee
 * (`src/cache/capture.ts`).
 */
export interface UpstreamBody extends AsyncIterable<Buffer> {
  /** The whole body as UTF-8 text; rejects if it breaks or is destroyed first. */
  text(): Promise<string>;
  /** Reads and discards the rest (a long one is cut instead); resolves once it is over, whichever way. */
  dump(): Promise<void>;
  /**
   * Resolves once the first byte has arrived (or the body ended), without taking it: a
   * body silent for `timeoutMs` is destroyed and rejects with a `timeout` UpstreamFailure
   * naming `limitMs`; one that breaks first, a `connect_error`; the signal, `aborted`.
   */
  firstByte(timeoutMs: number, signal: AbortSignal, limitMs?: number): Promise<void>;
  /** Stops the body: what is queued is dropped, the upstream request cancelled if it is still running. */
  destroy(err?: Error): void;
  /** Runs `fn` once the body is over: read to its end, broken or destroyed (at once if it already is). */
  onClose(fn: () => void): void;
}

/** The upstream side of a body: undici's dispatch controller (pause and resume its socket, abort the request). */
export interface BodyFlow {
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

/** Bytes queued for a reader that is not keeping up before the upstream's socket is paused. */
export const HIGH_WATER_BYTES = 64 * 1024;
/** What `dump()` reads and throws away before it cuts the connection instead (as undici's dump). */
const DUMP_LIMIT_BYTES = 128 * 1024;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

interface Reader {
  resolve(r: IteratorResult<Buffer>): void;
  reject(err: Error): void;
}

/**
 * An upstream reply body fed by the dispatch handler (`push`, `end`, `fail`): a queue of
 * the chunks the reader has not taken yet. A waiting reader is handed each chunk as it
 * arrives; past HIGH_WATER_BYTES queued, the upstream's socket is paused until the reader
 * takes them, so a slow client never makes the gateway hold a whole reply. The body is
 * its own async iterator (one reader at a time): `for await` allocates nothing but the
 * results, and leaving the loop early (`break`, a throw) destroys the body, cancelling
 * the upstream request.
 */
export class QueuedBody implements UpstreamBody, AsyncIterator<Buffer> {
  private chunks: Buffer[] = [];
  private head = 0;
  private queued = 0;
  private paused = false;
  private ended = false;
  private closed = false;
  /** Why reads fail: the upstream broke, or the body was destroyed. */
  private failure: Error | undefined;
  private reader: Reader | undefined;
  /** `firstByte`'s wake-up, at the first chunk, the end or a failure. */
  private watcher: (() => void) | undefined;
  private closers: Array<() => void> | undefined;
  /** Bytes `dump()` has thrown away, or -1 when not dumping. */
  private dumped = -1;
  private dumpDone: (() => void) | undefined;

  constructor(private readonly flow: BodyFlow) {}

  // ---- the upstream's side (the dispatch handler)

  push(chunk: Buffer): void {
    if (this.closed) return;
    if (this.dumped >= 0) {
      this.dumped += chunk.length;
      if (this.dumped > DUMP_LIMIT_BYTES) this.destroy();
      return;
    }
    const reader = this.reader;
    if (reader) {
      this.reader = undefined;
      reader.resolve({ done: false, value: chunk });
      return;
    }
    this.chunks.push(chunk);
    this.queued += chunk.length;
    if (this.queued > HIGH_WATER_BYTES && !this.paused) {
      this.paused = true;
      this.flow.pause();
    }
    this.watcher?.();
  }

  end(): void {
    if (this.closed) return;
    this.ended = true;
    if (this.dumped >= 0) this.close();
    else if (this.reader) {
      this.reader.resolve(DONE);
      this.reader = undefined;
      this.close();
    }
    this.watcher?.();
  }

  /** The upstream broke: a waiting reader gets the error at once, what was queued is dropped (as a Node stream's destroy does). */
  fail(err: Error): void {
    if (this.closed) return;
    this.failure = err;
    this.drop();
    this.watcher?.();
    this.close();
  }

  // ---- the reader's side

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Buffer>> {
    if (this.head < this.chunks.length) return Promise.resolve({ done: false, value: this.take() });
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) {
      this.close();
      return Promise.resolve(DONE);
    }
    if (this.reader) return Promise.reject(new Error('an upstream body has one reader at a time'));
    return new Promise((resolve, reject) => {
      this.reader = { resolve, reject };
    });
  }

  /** Leaving a `for await` early: the rest is not wanted. */
  return(): Promise<IteratorResult<Buffer>> {
    this.destroy();
    return Promise.resolve(DONE);
  }

  async text(): Promise<string> {
    const parts: Buffer[] = [];
    for (let r = await this.next(); r.done !== true; r = await this.next()) parts.push(r.value);
    return parts.length === 1 ? (parts[0] as Buffer).toString('utf8') : Buffer.concat(parts).toString('utf8');
  }

  dump(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.drop();
    if (this.ended) {
      this.close();
      return Promise.resolve();
    }
    this.dumped = 0;
    if (this.paused) {
      this.paused = false;
      this.flow.resume();
    }
    return new Promise((resolve) => {
      this.dumpDone = resolve;
    });
  }

  firstByte(timeoutMs: number, signal: AbortSignal, limitMs = timeoutMs): Promise<void> {
    if (this.head < this.chunks.length || this.ended) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (err?: UpstreamFailure): void => {
        clearTimeout(timer);
        this.watcher = undefined;
        signal.removeEventListener('abort', onAbort);
        if (err) {
          this.destroy();
          reject(err);
        } else resolve();
      };
      const onAbort = (): void => done(new UpstreamFailure('aborted', 'request aborted'));
      const timer = setTimeout(() => done(new UpstreamFailure('timeout', `no first byte within ${limitMs} ms`, null, '', limitMs)), timeoutMs);
      this.watcher = (): void => {
        const failure = this.failure;
        if (!failure) done();
        else if (signal.aborted) onAbort();
        else done(new UpstreamFailure('connect_error', `the response body broke: ${failure.message}`));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (this.failure) this.watcher();
    });
  }

  destroy(err?: Error): void {
    if (this.closed) return;
    this.failure = err ?? new Error('the upstream body was destroyed before its end');
    this.drop();
    if (!this.ended) this.flow.abort(this.failure);
    this.watcher?.();
    this.close();
  }

  onClose(fn: () => void): void {
    if (this.closed) fn();
    else (this.closers ??= []).push(fn);
  }

  private take(): Buffer {
    const chunk = this.chunks[this.head] as Buffer;
    this.chunks[this.head++] = EMPTY;
    if (this.head === this.chunks.length) {
      this.chunks.length = 0;
      this.head = 0;
    }
    this.queued -= chunk.length;
    if (this.paused && this.queued < HIGH_WATER_BYTES) {
      this.paused = false;
      this.flow.resume();
    }
    return chunk;
  }

  private drop(): void {
    this.chunks = [];
    this.head = 0;
    this.queued = 0;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    const reader = this.reader;
    this.reader = undefined;
    if (reader) {
      if (this.failure) reader.reject(this.failure);
      else reader.resolve(DONE);
    }
    this.dumpDone?.();
    this.dumpDone = undefined;
    const closers = this.closers;
    this.closers = undefined;
    if (closers) for (const fn of closers) fn();
  }
}

const EMPTY = Buffer.alloc(0);
