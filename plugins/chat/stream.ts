import { PassThrough } from 'node:stream';
import { once } from 'node:events';
import { elapsedMs } from '../../src/exchange.js';
import type { Metered, RespondContext } from '../../src/plugin.js';
import { formatSse, SseDecoder } from '../../src/sse.js';
import type { ChatDialect, TokenUsage } from './dialects/types.js';
import { chatCost, estimateTokens, usageObject } from './metering.js';
import type { ChatRequest } from './validate.js';

/**
 * Streams a reply to the client in OpenAI chunk format as upstream events arrive.
 * Usage always comes from the upstream when it sends it; when the client aborts or
 * the upstream breaks first, the delivered tokens are counted and billed (estimated).
 * A broken upstream ends with an explicit error event, never a silent [DONE].
 */
export async function respondStream(ctx: RespondContext<ChatRequest>, dialect: ChatDialect): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const out = new PassThrough();
  void reply.code(200).header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no').send(out);
  const write = async (text: string): Promise<void> => {
    if (ex.ttfbMs === undefined) ex.ttfbMs = elapsedMs(ex);
    if (!out.write(text) && !ex.abort.signal.aborted) await Promise.race([once(out, 'drain'), once(ex.abort.signal, 'abort')]);
  };
  const translator = dialect.streamTranslator(parsed.model);
  const decoder = new SseDecoder();
  let usage: TokenUsage | undefined;
  let usageChunk: Record<string, unknown> | undefined;
  let delivered = 0;
  let done = false;
  let error: string | undefined;
  try {
    outer: for await (const chunk of upstream.body) {
      for (const ev of decoder.push(chunk as Buffer)) {
        const t = translator.onEvent(ev.event, ev.data);
        for (const c of t.chunks) await write(formatSse(c));
        delivered += t.deliveredTokens;
        if (t.usage) usage = t.usage;
        if (t.usageChunk) usageChunk = t.usageChunk;
        if (t.error) {
          error = t.error;
          break outer;
        }
        if (t.done) done = true;
      }
    }
  } catch (err) {
    if (!ex.abort.signal.aborted) error = `the upstream stream broke: ${(err as Error).message}`;
  }
  const clientGone = ex.abort.signal.aborted;
  if (!done && !error && !clientGone) error = 'the upstream stream ended before the reply was complete';
  const complete = done && !error && !clientGone;
  const estimated = !complete || !usage;
  const billed: TokenUsage = complete && usage
    ? usage
    : { promptTokens: usage?.promptTokens ?? estimateTokens(parsed.prompt ?? ''), completionTokens: Math.max(delivered, usage?.completionTokens ?? 0) };
  const cost = chatCost(route.model, billed);
  if (!clientGone) {
    if (error) {
      ex.errorCode = 'upstream_error';
      await write(formatSse(JSON.stringify({ error: { message: error, type: 'upstream_error', code: 'upstream_error', param: null, usedProvider: route.provider.id, requestedModel: parsed.model } })));
    } else {
      if (parsed.includeUsage) {
        const base = usageChunk ?? { id: `chatcmpl-${ex.id}`, object: 'chat.completion.chunk', created: Math.floor(ex.startedAt / 1000), model: parsed.model, choices: [] };
        await write(formatSse(JSON.stringify({ ...base, usage: usageObject(billed, cost) })));
      }
      await write(formatSse('[DONE]'));
    }
  }
  out.end();
  return { costPicos: BigInt(cost.totalMicros) * 1_000_000n, estimated };
}
