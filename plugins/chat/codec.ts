import type { GatewayError } from '../../src/errors.js';
import { formatSse } from '../../src/sse.js';
import type { ChatDialect, ReplyContext, TokenUsage } from './dialects/types.js';
import { usageObject, type ChatCost } from './metering.js';
import type { ChatRequest } from './request.js';

/** What one upstream stream event becomes for the client: SSE frames ready to write. */
export interface StreamStep {
  frames: string[];
  /** Usage so far, when the event carried it (cumulative). */
  usage?: TokenUsage;
  deliveredTokens: number;
  done: boolean;
  error?: string;
}

/** A streamed reply in the client's format, fed upstream events one at a time. */
export interface ClientStream {
  onEvent(event: string | undefined, data: string): StreamStep;
  /** The frames that end a complete reply, carrying the billed usage and its cost. */
  finish(usage: TokenUsage, cost: ChatCost): string[];
  /** The frames that end a broken reply: an explicit error, never a silent end. */
  fail(err: GatewayError): string[];
}

/** A non-streamed reply in the client's format. */
export interface ClientReply {
  usage: TokenUsage | undefined;
  /** The reply's text, to estimate usage when the upstream reported none. */
  text: string;
  render(usage: TokenUsage, cost: ChatCost): unknown;
}

/** Upstream replies (through a dialect) → one client format. */
export interface ChatCodec {
  /** Throws when the upstream body is malformed. */
  response(body: string): ClientReply;
  stream(): ClientStream;
}

/** A client-facing wire format (an endpoint's request and reply shape). */
export interface ClientFormat {
  readonly name: string;
  /** The dialect that speaks this format upstream: a request in this format goes to it untranslated. */
  readonly nativeDialect: string;
  codec(dialect: ChatDialect, req: ChatRequest, ctx: ReplyContext): ChatCodec;
}

/** The text of a canonical completion's choices. */
export function completionText(completion: Record<string, unknown>): string {
  const choices = Array.isArray(completion.choices) ? (completion.choices as Array<{ message?: { content?: unknown } }>) : [];
  return choices.map((c) => (typeof c.message?.content === 'string' ? c.message.content : '')).join('');
}

const asRecord = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

/**
 * The OpenAI chat format (`/v1/chat/completions`): canonical chunks go out as they
 * are; the usage chunk (when the client asked for it) and every reply's `usage` carry
 * the gateway's cost fields; a stream ends with `[DONE]`, or with an error event.
 */
export const openaiFormat: ClientFormat = {
  name: 'openai',
  nativeDialect: 'openai',
  codec(dialect, req, ctx) {
    return {
      response(body) {
        const { completion, usage } = dialect.response(body, ctx);
        return {
          usage,
          text: completionText(completion),
          render: (u, c) => ({ ...completion, usage: { ...asRecord(completion.usage), ...usageObject(u, c) } }),
        };
      },
      stream() {
        const translator = dialect.streamTranslator(ctx);
        let usageChunk: Record<string, unknown> | undefined;
        return {
          onEvent(event, data) {
            const t = translator.onEvent(event, data);
            if (t.usageChunk) usageChunk = t.usageChunk;
            return { frames: t.chunks.map((c) => formatSse(c)), usage: t.usage, deliveredTokens: t.deliveredTokens, done: t.done, error: t.error };
          },
          finish(u, c) {
            const frames: string[] = [];
            if (req.includeUsage) {
              const base = usageChunk ?? { id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.requestedModel, choices: [] };
              frames.push(formatSse(JSON.stringify({ ...base, usage: { ...asRecord(base.usage), ...usageObject(u, c) } })));
            }
            frames.push(formatSse('[DONE]'));
            return frames;
          },
          fail: (err) => [formatSse(JSON.stringify(err.toBody()))],
        };
      },
    };
  },
};
