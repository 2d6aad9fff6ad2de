import type { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { GatewayError } from '../lib/errors.js';
import type { Exchange } from './exchange.js';

/**
 * How long a cut reply (drain deadline, stall) may still take to hand its last bytes —
 * the error event — to the client's socket before its connection is closed.
 */
export const CUT_GRACE_MS = 250;

/**
 * A reply body written as it is produced (an SSE stream, audio), with backpressure and
 * a stall watchdog. A write waits while the client does not read; a client that takes
 * nothing for `stallMs` (it stopped reading, or a bug holds the socket) has its exchange
 * cut with `stream_stalled`, like the drain deadline cuts it: the upstream call is
 * cancelled and the reply is billed for what was delivered. `end` says whether the whole
 * body reached the client's socket, so that a reply the client never received is never
 * billed as a success. The first chunk written stamps the exchange's time to first byte
 * (the core passes `onFirstWrite`), so no plugin times its own reply.
 *
 * The chunks go straight to the response (`reply.raw`), not through a stream handed to
 * `reply.send`: no PassThrough and pipe between the writer and the socket. What fastify
 * does for a streamed payload is done here: the reply's headers (the request id set in
 * `onRequest`, these) are set on the response, which sends them with its first bytes.
 * fastify's `onResponse` hooks (the request's row, the access log) run when the response
 * finishes or fails, however it was written; `onSend` hooks do not see a stream (the one
 * model routes have stamps the time to first byte of a reply sent whole only).
 */
export class StreamedReply {
  private readonly res: ServerResponse;
  private wrote = false;

  /** `onFirstWrite` runs at the first chunk with bytes in it: the core stamps the time to first byte there. */
  constructor(private readonly ex: Exchange, private readonly reply: FastifyReply, private readonly stallMs: number, private readonly onFirstWrite?: () => void) {
    this.res = reply.raw;
  }

  /** Sets the status and headers; they go out with the first write (as fastify's own streamed send does). */
  start(headers: Record<string, string>): this {
    for (const [name, value] of Object.entries(headers)) void this.reply.header(name, value);
    void this.reply.code(200);
    const all = this.reply.getHeaders();
    for (const name in all) {
      const value = all[name];
      if (value !== undefined) this.res.setHeader(name, value);
    }
    return this;
  }

  /**
   * Writes a chunk. Resolves when the client can take more, or at once when the exchange
   * is over (the client left, or the reply was cut): false then.
   */
  async write(chunk: string | Uint8Array): Promise<boolean> {
    const signal = this.ex.abort.signal;
    if (signal.aborted) return false;
    this.firstWrite(chunk);
    const res = this.res;
    if (res.write(chunk)) return true;
    if (res.destroyed) return false;
    const what = await firstOf(res, ['drain', 'close'], signal, this.stallMs);
    if (what === 'timeout') this.cut();
    return what === 'drain';
  }

  /**
   * Ends the reply with its last chunk. Resolves true once every byte is handed to the
   * client's socket; false when the client left first, or the reply was cut (drain
   * deadline, stall) — its connection is closed then, after CUT_GRACE_MS for the last
   * chunk (the error event) to get out.
   */
  async end(last?: string): Promise<boolean> {
    const res = this.res;
    if (res.destroyed) return false;
    // Not corked to join the last chunk and the end of the chunked body in one write: that
    // made no measurable difference (docs/benchmarks.md), and a corked socket never drains.
    if (last !== undefined && last.length > 0) {
      this.firstWrite(last);
      res.end(last);
    } else {
      res.end();
    }
    const signal = this.ex.abort.signal;
    let what = await firstOf(res, ['finish', 'close'], signal.aborted ? undefined : signal, signal.aborted ? CUT_GRACE_MS : this.stallMs);
    if (what === 'timeout' && !signal.aborted) this.cut();
    // Cut (here, or while the client was still being written to): a last chance for the error event.
    else if (what === 'aborted') what = await firstOf(res, ['finish', 'close'], undefined, CUT_GRACE_MS);
    if (what === 'finish') return true;
    res.destroy();
    return false;
  }

  private firstWrite(chunk: string | Uint8Array): void {
    if (this.wrote || chunk.length === 0) return;
    this.wrote = true;
    this.onFirstWrite?.();
  }

  private cut(): void {
    if (this.ex.abort.signal.aborted) return;
    // At warn (the default level): a client that stopped reading is worth an operator's look.
    this.reply.log.warn({ code: 'stream_stalled', stallMs: this.stallMs }, `the client took nothing of this stream for ${this.stallMs} ms: cut`);
    this.ex.abort.abort(new GatewayError('stream_stalled', [this.stallMs]));
  }
}

type Waited = string | 'aborted' | 'timeout';

/** The first of `events` on `emitter`, the signal's abort, or `ms` passing; leaves no listener behind. */
function firstOf(emitter: EventEmitter, events: readonly string[], signal: AbortSignal | undefined, ms: number): Promise<Waited> {
  return new Promise((resolve) => {
    const listeners = events.map((name) => [name, (): void => done(name)] as const);
    const onAbort = (): void => done('aborted');
    const timer = setTimeout(() => done('timeout'), ms);
    function done(what: Waited): void {
      clearTimeout(timer);
      for (const [name, fn] of listeners) emitter.removeListener(name, fn);
      signal?.removeEventListener('abort', onAbort);
      resolve(what);
    }
    for (const [name, fn] of listeners) emitter.once(name, fn);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
