import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { elapsedMs, estimateTokens, type Exchange, GatewayError, InvalidUsage, type Metered, type RespondContext, serverCut, SseDecoder, type SseEvent } from '../../src/sdk.js';
import type { ClientStream, StreamStep } from './formats/types.js';
import type { TokenUsage } from './dialects/types.js';
import { chatCost, tokenCounts, usageRecord, ZERO_COST } from './metering.js';
import type { ChatRequest } from './request.js';

/** How a stream went, as far as billing is concerned. */
interface StreamOutcome {
  usage: TokenUsage | undefined;
  delivered: number;
  done: boolean;
  error: string | undefined;
  /** Frames read once the upstream said it was done, written with the closing frames in one write (and their tokens). */
  held: string[];
  heldTokens: number;
}

/**
 * Streams a reply to the client as upstream events arrive: each event is translated
 * and written at once, waiting for the client to drain (backpressure) — the reply is
 * never buffered whole. Billing uses the upstream's usage when the reply completed;
 * when the client aborts or the upstream breaks first, it bills the prompt and the
 * tokens delivered (estimated; nothing when nothing was delivered). A broken upstream
 * ends with an explicit error event, never a silent end; so does a stream the gateway
 * cuts at its drain deadline (`drain_timeout`), billed like a client that left.
 */
export async function respondStream(ctx: RespondContext<ChatRequest>, stream: ClientStream): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  ex.streamed = true;
  const out = new PassThrough();
  void reply.code(200).header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no').send(out);
  // One write per upstream read (its events' frames joined), not one per event.
  const write = async (frames: string[]): Promise<void> => {
    if (frames.length === 0) return;
    if (ex.ttfbMs === undefined) ex.ttfbMs = elapsedMs(ex);
    if (!out.write(frames.length === 1 ? frames[0] : frames.join('')) && !ex.abort.signal.aborted) {
      await Promise.race([once(out, 'drain'), once(ex.abort.signal, 'abort')]);
    }
  };
  let last: string[] = [];
  try {
    const outcome = await pump(ex, upstream.body, stream, write);
    last = outcome.held;
    const { metered, frames } = await finishStream(ctx, stream, outcome);
    last = frames;
    return metered;
  } finally {
    // Ended whatever happened, so a reply whose closing frames failed (a store error) does not hang.
    if (last.length > 0 && ex.ttfbMs === undefined) ex.ttfbMs = elapsedMs(ex);
    endCorked(reply.raw, out, last);
  }
}

/**
 * Writes the last frames and ends the reply in one socket write: the response is corked
 * until the PassThrough closes, so its last chunk and the end of the chunked body (which
 * the pipe writes a tick later) go out together instead of in two writes.
 */
function endCorked(res: ServerResponse, out: PassThrough, frames: string[]): void {
  if (res.destroyed || frames.length === 0) {
    out.end();
    return;
  }
  res.cork();
  out.once('close', () => res.uncork());
  out.end(frames.join(''));
}

/**
 * Bills the stream by how it went; returns what is left to write: the frames held back
 * after the upstream's end and the closing frames (the usage, or an error event).
 */
async function finishStream(ctx: RespondContext<ChatRequest>, stream: ClientStream, outcome: StreamOutcome): Promise<{ metered: Metered; frames: string[] }> {
  const { ex, parsed, route } = ctx;
  const cut = serverCut(ex);
  const clientGone = ex.abort.signal.aborted && !cut;
  // Held frames reach the client unless it left: only then are their tokens delivered.
  const frames = clientGone ? [] : outcome.held;
  if (!clientGone) outcome.delivered += outcome.heldTokens;
  if (!outcome.done && !outcome.error && !clientGone && !cut) outcome.error = 'the upstream stream ended before the reply was complete';
  const complete = outcome.done && !outcome.error && !ex.abort.signal.aborted;
  const billed = billedUsage(outcome, complete, parsed.prompt ?? '');
  const cost = billed ? chatCost(route.model, billed) : ZERO_COST;
  ex.extra = { ...ex.extra, usage: usageRecord(billed) };
  ex.usage = tokenCounts(billed);
  if (clientGone && !complete) ex.errorCode = 'client_closed_request';
  if (cut && !complete) {
    ex.errorCode = cut.code;
    frames.push(...stream.fail(cut.withContext({ requestedModel: parsed.model, usedProvider: route.provider.id })));
  } else if (!clientGone) {
    if (outcome.error) {
      ex.errorCode = 'upstream_error';
      const err = new GatewayError('upstream_error', [outcome.error]).withContext({ requestedModel: parsed.model, usedProvider: route.provider.id });
      frames.push(...stream.fail(err));
    } else {
      frames.push(...(await stream.finish(billed ?? { promptTokens: 0, completionTokens: 0 }, cost)));
    }
  }
  return { metered: { costPicos: BigInt(cost.totalMicros) * 1_000_000n, estimated: !complete || !outcome.usage }, frames };
}

/** Reads upstream events until the body ends, an error event, or the client leaves; writes once per upstream read. */
async function pump(ex: Exchange, body: AsyncIterable<unknown>, stream: ClientStream, write: (frames: string[]) => Promise<void>): Promise<StreamOutcome> {
  const o: StreamOutcome = { usage: undefined, delivered: 0, done: false, error: undefined, held: [], heldTokens: 0 };
  const reader = stream.bytes ?? eventReader(stream);
  const apply = async (step: StreamStep): Promise<boolean> => {
    if (o.done || step.done) {
      // The upstream is done: what is left waits for the closing frames (one write for both).
      o.held.push(...step.frames);
      o.heldTokens += step.deliveredTokens;
    } else {
      await write(step.frames);
      o.delivered += step.deliveredTokens;
    }
    if (step.usage) o.usage = step.usage;
    if (step.done) o.done = true;
    if (step.error) o.error = step.error;
    return !step.error;
  };
  try {
    for await (const chunk of body) {
      if (!(await apply(reader.push(chunk as Buffer)))) return o;
    }
    await apply(reader.end());
  } catch (err) {
    // A count that is not one (InvalidUsage) ends the stream like any malformed event; it never reaches o.usage.
    if (err instanceof InvalidUsage) o.error = err.message;
    else if (!ex.abort.signal.aborted) o.error = `the upstream stream broke: ${(err as Error).message}`;
  }
  return o;
}

/** A count that is not one (InvalidUsage) ends the stream like any malformed event: the frames before it still go out. */
export function guarded(onEvent: () => StreamStep): StreamStep {
  try {
    return onEvent();
  } catch (err) {
    if (err instanceof InvalidUsage) return { frames: [], deliveredTokens: 0, done: false, error: err.message };
    throw err;
  }
}

/** Decoded events of each upstream read, through the stream's `onEvent`, as one step (up to an error event). */
function eventReader(stream: ClientStream): { push(chunk: Uint8Array): StreamStep; end(): StreamStep } {
  const decoder = new SseDecoder();
  const steps = (events: SseEvent[]): StreamStep => {
    const all: StreamStep = { frames: [], deliveredTokens: 0, done: false };
    for (const ev of events) {
      const step = guarded(() => stream.onEvent(ev.event, ev.data));
      for (const f of step.frames) all.frames.push(f);
      all.deliveredTokens += step.deliveredTokens;
      if (step.usage) all.usage = step.usage;
      if (step.done) all.done = true;
      if (step.error) {
        all.error = step.error;
        break;
      }
    }
    return all;
  };
  return { push: (chunk) => steps(decoder.push(chunk)), end: () => steps(decoder.end()) };
}

/**
 * What a stream is billed for: the upstream's usage when it completed; otherwise the
 * prompt (as reported, or estimated) and the delivered completion tokens — or nothing
 * when no token reached the client.
 */
function billedUsage(o: StreamOutcome, complete: boolean, prompt: string): TokenUsage | undefined {
  if (complete && o.usage) return o.usage;
  if (!complete && o.delivered === 0) return undefined;
  return { ...o.usage, promptTokens: o.usage?.promptTokens ?? estimateTokens(prompt), completionTokens: o.delivered };
}
