import {
  type CacheDef, type CacheHit, type CacheRequest, captureBody, type Exchange, type Metered, type ModelRoute,
  type RespondContext, type ResponseCacheApi, SseDecoder,
} from '../../src/sdk.js';
import { DIALECTS } from './dialects/index.js';
import { type ChatDialect, chunkJson, type ReplyContext, type TokenUsage } from './dialects/types.js';
import type { ClientFormat } from './formats/types.js';
import { type ChatCost, chatCost } from './metering.js';
import { contentText, type ChatRequest, isObject } from './request.js';
import { foldChunks } from './cache-fold.js';

/*
 * Chat's part of the response cache (docs/cache.md). A reply is stored in a format-neutral
 * form: the canonical (OpenAI) completion with the text pieces as they were streamed, and
 * the billed usage. It is replayed in the requesting client's own format through that
 * format's codec fed by the OpenAI dialect, as a JSON reply or as a stream, whichever the
 * request asks for: a streamed reply can answer a non-streamed request and the reverse.
 */

/** A stored chat reply. */
export interface StoredChat {
  /** The canonical `chat.completion` (its id, model and usage are the replay's own). */
  completion: Record<string, unknown>;
  /** The text of choice 0 in the pieces it was streamed in (one piece for a JSON reply). */
  pieces: string[];
  usage: TokenUsage;
}

/** Body fields that say how to deliver the reply or who asks, not what it says. */
const DELIVERY_FIELDS = new Set(['stream', 'stream_options', 'user', 'metadata', 'store', 'service_tier', 'safety_identifier', 'prompt_cache_key']);

const withoutDelivery = (body: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(body).filter(([k]) => !DELIVERY_FIELDS.has(k)));

/** What keys a chat request: its format, its canonical body and its native body (delivery fields aside). */
function chatCacheRequest(format: ClientFormat, req: ChatRequest): CacheRequest {
  const body = withoutDelivery(req.body);
  const key = { format: format.name, body, native: req.native ? withoutDelivery(req.native.body) : null };
  const toolOptOut = req.body.messages.some((m) => m.role === 'tool' && m.cacheable === false);
  const temperature = typeof req.body.temperature === 'number' ? req.body.temperature : undefined;
  const last = req.body.messages[req.body.messages.length - 1];
  const semantic = last && last.role === 'user' && contentText(last.content).length > 0
    ? { text: contentText(last.content), prefix: { ...key, body: { ...body, messages: req.body.messages.slice(0, -1) }, last: lastShape(last) } }
    : undefined;
  return {
    key,
    uncacheable: (req.choices ?? 1) > 1 ? 'n > 1' : toolOptOut ? 'a tool result marked cacheable: false' : undefined,
    temperature,
    semantic,
  };
}

/** The last turn's fields other than its text (its role, name, parts that are not text): these match exactly too. */
function lastShape(m: Record<string, unknown>): unknown {
  const { content, ...rest } = m;
  return { ...rest, media: Array.isArray(content) ? content.filter((p) => !(isObject(p) && p.type === 'text')) : [] };
}

/** The most of an upstream reply kept to be stored. */
const CAPTURE_CAP = 8 * 1024 * 1024;

/**
 * Runs `respond` on a copy of the upstream body when the cache wants this reply, then
 * offers its stored form: the upstream's bytes read back through the route's dialect.
 */
export async function respondCaching(
  cache: ResponseCacheApi, ctx: RespondContext<ChatRequest>, dialect: ChatDialect, replyCtx: ReplyContext,
  respond: (ctx: RespondContext<ChatRequest>) => Promise<Metered>,
): Promise<Metered> {
  if (!cache.wants(ctx.ex) || ((ctx.parsed.choices ?? 1) > 1 && ctx.parsed.stream)) return respond(ctx);
  const captured = captureBody(ctx.upstream.body, CAPTURE_CAP);
  const metered = await respond({ ...ctx, upstream: { ...ctx.upstream, body: captured.body } });
  const bytes = captured.bytes();
  if (!bytes || ctx.ex.errorCode !== undefined) return metered;
  const stored = storedForm(bytes, ctx.parsed.stream, ctx.route, dialect, replyCtx);
  if (stored) cache.offer(ctx.ex, stored);
  return metered;
}

/** The stored form of a complete upstream reply, or undefined when it is not one (no usage, a broken stream). */
function storedForm(bytes: Buffer, stream: boolean, route: ModelRoute, dialect: ChatDialect, ctx: ReplyContext): StoredChat | undefined {
  try {
    if (!stream) {
      const { completion, usage } = dialect.response(bytes.toString('utf8'), ctx);
      const text = (completion.choices as Array<{ message?: { content?: unknown } }> | undefined)?.[0]?.message?.content;
      return usage ? { completion, pieces: typeof text === 'string' ? [text] : [], usage } : undefined;
    }
    const decoder = DIALECTS.get(route.endpoint.dialect ?? '')?.eventDecoder?.() ?? new SseDecoder();
    const translator = dialect.streamTranslator(ctx);
    const chunks: string[] = [];
    let usage: TokenUsage | undefined;
    let done = false;
    for (const e of [...decoder.push(bytes), ...decoder.end()]) {
      const t = translator.onEvent(e.event, e.data);
      if (t.error) return undefined;
      chunks.push(...t.chunks);
      if (t.usage) usage = t.usage;
      if (t.done) done = true;
    }
    if (!done || !usage) return undefined;
    const { completion, pieces } = foldChunks(chunks, ctx);
    return { completion, pieces, usage };
  } catch {
    return undefined; // not stored; the client already has its reply
  }
}

/** The hit's charge: `hit_price` of the original input and output costs, at the model's prices now. */
function hitCost(route: ModelRoute, usage: TokenUsage, hit: CacheHit): ChatCost {
  const full = chatCost(route.model, usage);
  const inputMicros = hit.price(full.inputMicros);
  const outputMicros = hit.price(full.outputMicros);
  return { inputMicros, outputMicros, totalMicros: inputMicros + outputMicros };
}

const SSE_HEADERS: Record<string, string> = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };

/** Replays a stored reply in the client's format: JSON, or a stream of the stored pieces. */
async function replayChat(format: ClientFormat, ctx: Omit<RespondContext<ChatRequest>, 'upstream'>, hit: CacheHit<StoredChat>, replyCtx: ReplyContext): Promise<Metered> {
  const { ex, parsed, route } = ctx;
  const openai = DIALECTS.get('openai');
  if (!openai) throw new Error('the openai chat dialect is not loaded');
  const codec = format.codec(openai, parsed, replyCtx, { orgId: ex.org?.id ?? '' });
  const { usage, completion, pieces } = hit.entry.body;
  const cost = hitCost(route, usage, hit);
  // No usage: a hit spends no tokens (the tpm limits), its original counts are in extra.cache_usage.
  const metered: Metered = { costMicros: cost.totalMicros };
  if (!parsed.stream) {
    const own = { ...completion, id: replyCtx.id, created: replyCtx.created, model: replyCtx.requestedModel };
    const translated = codec.response(JSON.stringify(own));
    const body = await translated.render(usage, cost);
    void ctx.reply.code(200).type('application/json').send(JSON.stringify(body));
    return metered;
  }
  const stream = codec.stream();
  const frames: string[] = [];
  for (const data of replayChunks(completion, pieces, replyCtx, usage)) frames.push(...stream.onEvent(undefined, data).frames);
  frames.push(...(await stream.finish(usage, cost)));
  const out = ctx.openStream(SSE_HEADERS, { tokens: true });
  await out.write(frames.join(''));
  if (!(await out.end())) return { ...metered, errorCode: ex.abort.signal.aborted ? 'client_closed_request' : 'stream_stalled' };
  return metered;
}

/** The canonical chunks of a stored completion: role, reasoning, text pieces, tool calls, finish, usage, [DONE]. */
function replayChunks(completion: Record<string, unknown>, pieces: string[], ctx: ReplyContext, usage: TokenUsage): string[] {
  const choices = Array.isArray(completion.choices) ? (completion.choices as Array<Record<string, unknown>>) : [];
  const out: string[] = [];
  choices.forEach((choice, i) => {
    const message = isObject(choice.message) ? choice.message : {};
    const withIndex = (json: string): string => (i === 0 ? json : json.replace('"index":0', `"index":${i}`));
    out.push(withIndex(chunkJson(ctx, { role: 'assistant', content: '' }, null)));
    if (typeof message.reasoning_content === 'string' && message.reasoning_content) out.push(withIndex(chunkJson(ctx, { reasoning_content: message.reasoning_content }, null)));
    const text = i === 0 && pieces.length > 0 ? pieces : typeof message.content === 'string' && message.content ? [message.content] : [];
    for (const piece of text) out.push(withIndex(chunkJson(ctx, { content: piece }, null)));
    const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Array<{ id?: string; function?: { name?: string; arguments?: string } }>) : [];
    calls.forEach((c, n) => { out.push(withIndex(chunkJson(ctx, { tool_calls: [{ index: n, id: c.id, type: 'function', function: { name: c.function?.name, arguments: c.function?.arguments ?? '' } }] }, null))); });
    out.push(withIndex(chunkJson(ctx, {}, (choice.finish_reason as 'stop' | null) ?? 'stop')));
  });
  out.push(JSON.stringify({ id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.requestedModel, choices: [], usage: {
    prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
  } }));
  out.push('[DONE]');
  return out;
}

/** The cache definition of one client format. */
export function chatCacheDef(format: ClientFormat, replyCtx: (ex: Exchange, req: ChatRequest) => ReplyContext): CacheDef<ChatRequest, StoredChat> {
  return {
    request: (req) => chatCacheRequest(format, req),
    replay: (ctx, hit) => replayChat(format, ctx, hit, replyCtx(ctx.ex, ctx.parsed)),
  };
}

