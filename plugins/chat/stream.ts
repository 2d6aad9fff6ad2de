import { estimateTokens, type Exchange, GatewayError, InvalidUsage, type Metered, type RespondContext, serverCut, SseDecoder } from '../../src/sdk.js';
import type { ClientStream, StreamStep } from './formats/types.js';
import { DIALECTS } from './dialects/index.js';
import type { EventDecoder, TokenUsage, UpstreamEvent } from './dialects/types.js';
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
  /** The closing frames carry the usage: the reply is complete if they reach the client. */
  finished: boolean;
  /** A post-upstream guardrail refused the complete reply: it ended with this error event instead of its closing frames. */
  refused?: GatewayError;
}

const SSE_HEADERS: Record<string, string> = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };

/**
 * Streams a reply to the client as upstream events arrive: each upstream read is
 * translated and written at once, waiting for the client to read (backpressure) — the
 * reply is never buffered whole. A broken upstream ends with an explicit error event,
 * never a silent end; so does a stream the gateway cuts (`drain_timeout` at its drain
 * deadline, `stream_stalled` when the client takes nothing for
 * `server.stream_stall_timeout_ms`).
 *
 * Billing waits for the end: the upstream's usage only when the client's socket took the
 * whole reply — its last tokens, the usage and the terminator. A client that left, a
 * stream that broke or was cut, or an end that never got out, is billed the prompt and
 * the tokens delivered (estimated; nothing when nothing was delivered) and logged with
 * its error code, never as a success.
 */
export async function respondStream(ctx: RespondContext<ChatRequest>, stream: ClientStream): Promise<Metered> {
  const { ex } = ctx;
  const body = ctx.openStream(SSE_HEADERS, { tokens: true });
  // One write per upstream read (its events' frames joined), not one per event.
  const write = async (frames: string[]): Promise<void> => {
    if (frames.length === 0) return;
    const text = frames.length === 1 ? (frames[0] as string) : frames.join('');
    await body.write(ex.replyFilter ? ex.replyFilter.frames(text) : text);
  };
  let last: string[] = [];
  let outcome: StreamOutcome | undefined;
  let reached = false;
  // Should the closing frames fail (a store error), the reply is billed as a cut one: for what was delivered.
  ctx.meter.sofar(() => bill(ctx, outcome && { ...outcome, finished: false }, reached));
  try {
    // The route's dialect splits its stream into events (Bedrock's binary event-stream frames); SSE otherwise.
    const decoder = DIALECTS.get(ctx.route.endpoint.dialect ?? '')?.eventDecoder?.() ?? new SseDecoder();
    outcome = await pump(ex, ctx.upstream.body, stream, write, decoder);
    last = outcome.held;
    last = await closingFrames(ctx, stream, outcome);
  } finally {
    // Ended whatever happened, so a reply whose closing frames failed (a store error) does not hang.
    reached = await body.end(last.join(''));
  }
  return bill(ctx, outcome, reached);
}

/**
 * What is left to write once the upstream is done: the frames held back after its end,
 * then the usage and cost (a complete reply) or the error event (a cut or broken one).
 * Nothing when the client left.
 */
async function closingFrames(ctx: RespondContext<ChatRequest>, stream: ClientStream, o: StreamOutcome): Promise<string[]> {
  const { ex, parsed, route } = ctx;
  const cut = serverCut(ex);
  if (ex.abort.signal.aborted && !cut) return [];
  if (!o.done && !o.error && !cut) o.error = 'the upstream stream ended before the reply was complete';
  // The project's guardrails see every frame (src/pipeline/hooks.ts ReplyFilter), the held ones and the closing ones too.
  const filter = ex.replyFilter;
  const seen = (list: string[]): string[] => (filter && list.length > 0 ? [filter.frames(list.join(''))] : list);
  const frames = seen(o.held);
  if (o.done && !o.error && !ex.abort.signal.aborted) {
    o.refused = await filter?.end();
    if (o.refused) {
      frames.push(...stream.fail(o.refused.withContext({ requestedModel: parsed.model, usedProvider: route.provider.id })));
      return frames;
    }
    o.finished = true;
    // The bill if the end reaches the client (see bill): what the closing frames state.
    const billed = billedUsage(o, true, o.delivered + o.heldTokens, parsed.prompt ?? '') ?? { promptTokens: 0, completionTokens: 0 };
    frames.push(...seen(await stream.finish(billed, chatCost(route.model, billed))));
  } else {
    const err = cut ?? new GatewayError('upstream_error', [o.error ?? '']);
    frames.push(...stream.fail(err.withContext({ requestedModel: parsed.model, usedProvider: route.provider.id })));
  }
  return frames;
}

/**
 * Bills the stream by how it ended. Complete only when the upstream finished, nothing cut
 * it and the client's socket took the whole end; otherwise the log row gets the reason —
 * the client left (`client_closed_request`), the gateway cut it (`drain_timeout`,
 * `stream_stalled`), the upstream broke (`upstream_error`) — and the bill covers the
 * tokens delivered: the held ones only if the end got out.
 */
function bill(ctx: RespondContext<ChatRequest>, o: StreamOutcome | undefined, reached: boolean): Metered {
  const { ex, parsed, route } = ctx;
  if (!o) return { costMicros: 0, estimated: true };
  if (o.refused) {
    // A complete reply a post-upstream guardrail refused: charged what the upstream charged (docs/guardrails.md).
    const billed = billedUsage(o, true, o.delivered + o.heldTokens, parsed.prompt ?? '') ?? { promptTokens: 0, completionTokens: 0 };
    const cost = chatCost(route.model, billed);
    return { costMicros: cost.totalMicros, estimated: !o.usage, usage: tokenCounts(billed), extra: { usage: usageRecord(billed) }, errorCode: o.refused.code };
  }
  const complete = o.finished && reached;
  const delivered = o.delivered + (reached ? o.heldTokens : 0);
  const billed = billedUsage(o, complete, delivered, parsed.prompt ?? '');
  const cost = billed ? chatCost(route.model, billed) : ZERO_COST;
  const errorCode = complete ? undefined : serverCut(ex)?.code ?? (ex.abort.signal.aborted || !reached ? 'client_closed_request' : 'upstream_error');
  return { costMicros: cost.totalMicros, estimated: !complete || !o.usage, usage: tokenCounts(billed), extra: { usage: usageRecord(billed) }, errorCode };
}

/** Reads upstream events until the body ends, an error event, or the client leaves; writes once per upstream read. */
async function pump(ex: Exchange, body: AsyncIterable<unknown>, stream: ClientStream, write: (frames: string[]) => Promise<void>, decoder: EventDecoder): Promise<StreamOutcome> {
  const o: StreamOutcome = { usage: undefined, delivered: 0, done: false, error: undefined, held: [], heldTokens: 0, finished: false };
  const reader = stream.bytes ?? eventReader(stream, decoder);
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
function eventReader(stream: ClientStream, decoder: EventDecoder): { push(chunk: Uint8Array): StreamStep; end(): StreamStep } {
  const steps = (events: UpstreamEvent[]): StreamStep => {
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
function billedUsage(o: StreamOutcome, complete: boolean, delivered: number, prompt: string): TokenUsage | undefined {
  if (complete && o.usage) return o.usage;
  if (!complete && delivered === 0) return undefined;
  return { ...o.usage, promptTokens: o.usage?.promptTokens ?? estimateTokens(prompt), completionTokens: delivered };
}
