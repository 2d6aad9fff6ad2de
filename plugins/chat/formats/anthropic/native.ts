import { estimateTokens, formatSse, type GatewayError } from '../../../../src/sdk.js';
import { passReply } from '../reply-scan.js';
import type { ChatCodec, StreamStep } from '../types.js';
import { anthropicUsage, type AnthropicUsage } from '../../dialects/anthropic/index.js';
import { MALFORMED_EVENT, parseStreamEvent, type ReplyContext } from '../../dialects/types.js';
import { anthropicUsageObject, errorFrame } from './encode.js';

interface NativeEvent {
  type?: string;
  message?: Record<string, unknown> & { usage?: AnthropicUsage };
  delta?: { type?: string; text?: string; partial_json?: string; thinking?: string; stop_reason?: string; stop_sequence?: null };
  usage?: AnthropicUsage;
  error?: { message?: string };
}

/** The reply `response` and `render` below would give, spliced into the upstream's text. */
const passedAnthropic = passReply<AnthropicUsage>({
  list: 'content',
  usage: anthropicUsage,
  withCost: (upstream, u, c) => ({ ...upstream, ...anthropicUsageObject(u, c) }),
});

const NOTHING: StreamStep = Object.freeze({ frames: Object.freeze([]) as unknown as string[], deliveredTokens: 0, done: false });

/**
 * Anthropic in, Anthropic out: a /v1/messages request served by an Anthropic-dialect
 * provider. Replies are forwarded as the provider sent them (every block type, tools
 * and thinking included), with the requested model id, and `usage` gains the
 * gateway's cost fields. On streams the provider's message_delta and message_stop are
 * held back and sent last, so the usage carries the cost that was billed.
 */
export function nativeAnthropicCodec(ctx: ReplyContext, errorBody: (err: GatewayError) => unknown): ChatCodec {
  return {
    response(body) {
      const msg = JSON.parse(body) as Record<string, unknown> & { content?: unknown; usage?: AnthropicUsage };
      if (typeof msg !== 'object' || msg === null || !Array.isArray(msg.content)) throw new Error('not an Anthropic message');
      const blocks = msg.content as Array<{ type?: string; text?: string }>;
      return {
        usage: anthropicUsage(msg.usage),
        text: blocks.map((b) => (b.type === 'text' ? b.text ?? '' : '')).join(''),
        render: (u, c) => ({ ...msg, model: ctx.requestedModel, usage: { ...msg.usage, ...anthropicUsageObject(u, c) } }),
      };
    },
    passthrough: (body) => passedAnthropic(body, JSON.stringify(ctx.requestedModel)),
    stream() {
      let usage: AnthropicUsage = {};
      let held: NativeEvent | undefined;
      return {
        onEvent(event, data): StreamStep {
          const ev = parseStreamEvent<NativeEvent>(data);
          if (!ev) return { ...NOTHING, error: MALFORMED_EVENT };
          const name = event ?? ev.type ?? 'message';
          switch (ev.type) {
            case 'error':
              return { ...NOTHING, error: ev.error?.message ?? 'upstream error' };
            case 'message_start': {
              usage = { ...ev.message?.usage };
              const frame = formatSse(JSON.stringify({ ...ev, message: { ...ev.message, model: ctx.requestedModel } }), name);
              return { frames: [frame], usage: anthropicUsage(usage), deliveredTokens: 0, done: false };
            }
            case 'message_delta':
              held = ev;
              usage = { ...usage, ...Object.fromEntries(Object.entries(ev.usage ?? {}).filter(([, v]) => typeof v === 'number')) };
              return { ...NOTHING, usage: anthropicUsage(usage) };
            case 'message_stop':
              return { ...NOTHING, done: true };
            case 'content_block_delta': {
              const d = ev.delta ?? {};
              return { frames: [formatSse(data, name)], deliveredTokens: estimateTokens(d.text ?? d.partial_json ?? d.thinking ?? ''), done: false };
            }
            default:
              return { frames: [formatSse(data, name)], deliveredTokens: 0, done: false };
          }
        },
        finish(u, c) {
          const delta: NativeEvent = held ?? { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null } };
          return [
            formatSse(JSON.stringify({ ...delta, usage: { ...delta.usage, ...anthropicUsageObject(u, c) } }), 'message_delta'),
            formatSse('{"type":"message_stop"}', 'message_stop'),
          ];
        },
        fail: (err) => [errorFrame(errorBody(err))],
      };
    },
  };
}
