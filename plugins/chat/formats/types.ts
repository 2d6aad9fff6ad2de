import type { GatewayError } from '../../../src/sdk.js';
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

/** A client-facing wire format (an endpoint's request and reply shape). */
export interface ClientFormat {
  readonly name: string;
  /** The dialect that speaks this format upstream: a request in this format goes to it untranslated. */
  readonly nativeDialect: string;
  codec(dialect: ChatDialect, req: ChatRequest, ctx: ReplyContext): ChatCodec;
}
