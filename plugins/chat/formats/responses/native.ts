import { estimateTokens, formatSse, type GatewayError } from '../../../../src/sdk.js';
import { isObject } from '../../request.js';
import { MALFORMED_EVENT, parseStreamEvent, type ChatDialect, type ReplyContext, type TokenUsage } from '../../dialects/types.js';
import type { ChatCost } from '../../metering.js';
import type { ChatCodec, StreamStep } from '../types.js';
import { historyItem } from './history.js';
import { itemId, responseId } from './ids.js';
import { itemType, type Item } from './parse.js';

/**
 * OpenAI's own Responses API as a provider endpoint (`dialect: openai-responses`,
 * declared in YAML as another chat endpoint). Only Responses API requests use it, and
 * they go as the client wrote them, but for what the gateway owns: the conversation
 * (previous_response_id and item references already expanded into `input`, ids
 * removed) and the storage (`store: false` upstream — the gateway keeps responses
 * itself).
 */
export const openaiResponsesDialect: ChatDialect = {
  name: 'openai-responses',
  unsupported: (req) => (req.native?.format === 'responses' ? undefined : { param: 'model', message: 'this provider endpoint serves Responses API requests only' }),
  requestBody(req, upstreamModel) {
    const { previous_response_id: _p, ...body } = req.native?.body ?? {};
    const input = (Array.isArray(body.input) ? (body.input as Item[]) : []).flatMap((item) => {
      if (itemType(item) === 'reasoning') return [];
      return [historyItem(item) ?? item];
    });
    return JSON.stringify({ ...body, model: upstreamModel, input, store: false });
  },
  pathVars: (_req, upstreamModel) => ({ model: upstreamModel }),
  response() {
    throw new Error('the openai-responses dialect replies through the Responses format only');
  },
  streamTranslator() {
    throw new Error('the openai-responses dialect replies through the Responses format only');
  },
};

interface UpstreamUsage {
  input_tokens?: number; output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number }; output_tokens_details?: { reasoning_tokens?: number };
}

/** Responses usage in the gateway's terms. */
function upstreamUsage(u: UpstreamUsage | null | undefined): TokenUsage | undefined {
  if (!u || typeof u.input_tokens !== 'number') return undefined;
  const reasoning = u.output_tokens_details?.reasoning_tokens;
  return { promptTokens: u.input_tokens, completionTokens: u.output_tokens ?? 0, cachedTokens: u.input_tokens_details?.cached_tokens ?? 0, ...(reasoning ? { reasoningTokens: reasoning } : {}) };
}

/** What the client sees of a response: the gateway's ids, the requested model, the echo of its own request. */
function rewriteResponse(r: Record<string, unknown>, ctx: ReplyContext, echo: Record<string, unknown>): Record<string, unknown> {
  const output = Array.isArray(r.output) ? (r.output as Item[]).map((it, i) => ({ ...it, id: itemId(ctx, itemType(it), i) })) : [];
  return { ...r, ...echo, id: responseId(ctx), model: ctx.requestedModel, output };
}

function outputText(output: unknown): string {
  if (!Array.isArray(output)) return '';
  return (output as Item[]).flatMap((it) => (Array.isArray(it.content) ? (it.content as Item[]) : [])).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
}

/** Finishes a response: usage and cost in, stored when asked; gives the object to send. */
export type Finalize = (response: Record<string, unknown>, usage: TokenUsage, cost: ChatCost) => Promise<Record<string, unknown>>;

interface NativeEvent {
  type?: string; output_index?: number; item_id?: string; delta?: string;
  item?: Item; response?: Record<string, unknown> & { usage?: UpstreamUsage; error?: { message?: string } }; message?: string;
}

/**
 * Responses in, Responses out: OpenAI's reply forwarded with the gateway's ids (the
 * response's and every item's, in every event), its usage gaining the cost fields.
 * On streams response.completed (or .incomplete) is held back and sent last, after
 * the response is stored, with the billed usage and cost.
 */
export function nativeResponsesCodec(ctx: ReplyContext, echo: Record<string, unknown>, finalize: Finalize, errorFrame: (err: GatewayError) => string): ChatCodec {
  return {
    response(body) {
      const r = JSON.parse(body) as Record<string, unknown> & { usage?: UpstreamUsage };
      if (!isObject(r) || !Array.isArray(r.output)) throw new Error('not a Response');
      const response = rewriteResponse(r, ctx, echo);
      return { usage: upstreamUsage(r.usage), text: outputText(r.output), render: (u, c) => finalize(response, u, c) };
    },
    stream() {
      const types = new Map<number, string>();
      let held: { type: string; sequence: unknown; response: Record<string, unknown> } | undefined;
      return {
        onEvent(_event, data): StreamStep {
          const ev = parseStreamEvent<NativeEvent & Record<string, unknown>>(data);
          if (!ev) return { frames: [], deliveredTokens: 0, done: false, error: MALFORMED_EVENT };
          const type = String(ev.type ?? '');
          if (type === 'error') return { frames: [], deliveredTokens: 0, done: false, error: ev.message ?? 'upstream error' };
          if (type === 'response.failed') return { frames: [], deliveredTokens: 0, done: false, error: ev.response?.error?.message ?? 'the response failed' };
          const out: Record<string, unknown> = { ...ev };
          if (ev.response) out.response = rewriteResponse(ev.response, ctx, echo);
          if (ev.item && typeof ev.output_index === 'number') {
            types.set(ev.output_index, itemType(ev.item));
            out.item = { ...ev.item, id: itemId(ctx, itemType(ev.item), ev.output_index) };
          }
          if (typeof ev.item_id === 'string' && typeof ev.output_index === 'number') out.item_id = itemId(ctx, types.get(ev.output_index) ?? 'message', ev.output_index);
          if (type === 'response.completed' || type === 'response.incomplete') {
            held = { type, sequence: ev.sequence_number, response: out.response as Record<string, unknown> };
            return { frames: [], usage: upstreamUsage(ev.response?.usage), deliveredTokens: 0, done: true };
          }
          const delivered = type.endsWith('.delta') && typeof ev.delta === 'string' ? estimateTokens(ev.delta) : 0;
          return { frames: [formatSse(JSON.stringify(out), type)], deliveredTokens: delivered, done: false };
        },
        async finish(u, c) {
          const last = held ?? { type: 'response.completed', sequence: undefined, response: rewriteResponse({ status: 'completed' }, ctx, echo) };
          const response = await finalize(last.response, u, c);
          return [formatSse(JSON.stringify({ type: last.type, sequence_number: last.sequence, response }), last.type)];
        },
        fail: (err) => [errorFrame(err)],
      };
    },
  };
}

