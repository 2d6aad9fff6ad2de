import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorFormatter, GatewayError } from '../../../src/sdk.js';
import type { ChatDialect, ReplyContext, TokenUsage } from '../dialects/types.js';
import type { ChatCost } from '../metering.js';
import type { ChatRequest } from '../request.js';

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

/**
 * A client-facing chat format: one endpoint, its request and reply shape, served by
 * every chat model whatever its provider's dialect. Each lives in `formats/<client>/`
 * and is listed in `formats/index.ts`; the plugin registers one route per format.
 */
export interface ClientFormat {
  readonly name: string;
  /** The route clients of this format call, e.g. `/v1/chat/completions`. */
  readonly url: string;
  /** Headers that may carry the key besides Bearer (`x-api-key` for Anthropic clients, `x-goog-api-key` for Google's). */
  readonly keyHeaders?: readonly string[];
  /** Error bodies in this format's shape; OpenAI-style when absent. */
  readonly formatError?: ErrorFormatter;
  /** The dialect that speaks this format upstream: a request in this format goes to it untranslated. */
  readonly nativeDialect: string;
  /** Validates a request body in this format (400 naming the field) and gives it in canonical form. */
  parse(body: unknown, headers: IncomingHttpHeaders): ChatRequest;
  codec(dialect: ChatDialect, req: ChatRequest, ctx: ReplyContext): ChatCodec;
}
