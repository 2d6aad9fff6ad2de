import { estimateTokens, GatewayError, InvalidUsage, type Metered, type RespondContext, upstreamText } from '../../src/sdk.js';
import type { ChatCodec, ClientReply, PassedReply } from './formats/types.js';
import { chatCost, tokenCounts, usageRecord } from './metering.js';
import type { ChatRequest } from './request.js';
import { respondStream } from './stream.js';

/** Replies to the client from a 2xx upstream response, streamed or not, and returns what it cost. */
export function respondChat(ctx: RespondContext<ChatRequest>, codec: ChatCodec): Promise<Metered> {
  return ctx.parsed.stream ? respondStream(ctx, codec.stream()) : respondJson(ctx, codec);
}

/**
 * The smallest reply forwarded as bytes: below it the scan costs what the parse and
 * re-render save (in process, an OpenAI reply of 0.7 KB: 4.8 µs scanned against 4.6 parsed;
 * 1 KB: 5.2 against 5.8; 4 KB: 9 against 13; 64 KB: 75 against 140 — docs/benchmarks.md).
 */
const PASS_MIN_CHARS = 1024;

/**
 * A non-streamed reply: the upstream's usage priced at the model's YAML prices (or,
 * when the upstream reported none, an estimate marked as such in the log).
 */
async function respondJson(ctx: RespondContext<ChatRequest>, codec: ChatCodec): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const text = await upstreamText(upstream, ex.abort.signal);
  let translated: ClientReply | undefined;
  let passed: PassedReply | undefined;
  try {
    // Nothing reads the reply object when no guardrail filters it: the upstream's bytes go on (codec.passthrough).
    passed = ex.replyFilter || text.length < PASS_MIN_CHARS ? undefined : codec.passthrough?.(text);
    if (!passed) translated = codec.response(text);
  } catch (err) {
    throw new GatewayError('upstream_error', [err instanceof InvalidUsage ? err.message : 'the upstream sent a malformed response']);
  }
  if (passed) {
    const cost = chatCost(route.model, passed.usage);
    void reply.code(200).type('application/json').send(passed.text(passed.usage, cost));
    return { costMicros: cost.totalMicros, estimated: false, usage: tokenCounts(passed.usage), extra: { usage: usageRecord(passed.usage) } };
  }
  translated = translated as ClientReply;
  const usage = translated.usage ?? { promptTokens: estimateTokens(parsed.prompt ?? ''), completionTokens: estimateTokens(translated.text) };
  const cost = chatCost(route.model, usage);
  const body = await translated.render(usage, cost);
  const metered: Metered = { costMicros: cost.totalMicros, estimated: translated.usage === undefined, usage: tokenCounts(usage), extra: { usage: usageRecord(usage) } };
  let json = JSON.stringify(body);
  if (ex.replyFilter) {
    // The project's guardrails see the reply first (src/pipeline/hooks.ts ReplyFilter): restored placeholders, masks, a block.
    // A block is refused after the upstream answered: charged what the upstream charged (docs/guardrails.md).
    ctx.meter.sofar(() => metered);
    json = await ex.replyFilter.body(json);
  }
  void reply.code(200).type('application/json').send(json);
  return metered;
}
