import type { GatewayError } from '../../../src/sdk.js';
import { completionText, type ChatDialect, type ReplyContext, type TokenUsage } from '../dialects/types.js';
import type { ChatCost } from '../metering.js';
import type { ChatCodec } from './types.js';

/** A client format's encoder of one canonical stream: frames per chunk, the closing frames, the failure frames. */
export interface StreamEncoder {
  /** `usage` is what the upstream reported so far (formats that announce it early use it). */
  chunk(data: string, usage: TokenUsage | undefined): string[];
  finish(usage: TokenUsage, cost: ChatCost): string[] | Promise<string[]>;
  fail(err: GatewayError): string[];
}

/** How a client format renders canonical replies: a whole reply, and a fresh encoder per stream. */
export interface ReplyEncoding {
  render(completion: Record<string, unknown>, text: string, usage: TokenUsage, cost: ChatCost): unknown;
  encoder(): StreamEncoder;
}

/**
 * The codec of a client format for a provider whose dialect is not the format's own:
 * the dialect turns upstream replies and events into the canonical form, the format's
 * encoding turns those into its own.
 */
export function translatedCodec(dialect: ChatDialect, ctx: ReplyContext, enc: ReplyEncoding): ChatCodec {
  return {
    response(body) {
      const { completion, usage } = dialect.response(body, ctx);
      const text = completionText(completion);
      return { usage, text, render: (u, c) => enc.render(completion, text, u, c) };
    },
    stream() {
      const translator = dialect.streamTranslator(ctx);
      const encoder = enc.encoder();
      let usage: TokenUsage | undefined;
      return {
        onEvent(event, data) {
          const t = translator.onEvent(event, data);
          if (t.usage) usage = t.usage;
          return { frames: t.chunks.flatMap((c) => encoder.chunk(c, usage)), usage: t.usage, deliveredTokens: t.deliveredTokens, done: t.done, error: t.error };
        },
        finish: (u, c) => encoder.finish(u, c),
        fail: (err) => encoder.fail(err),
      };
    },
  };
}
