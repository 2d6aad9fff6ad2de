import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorFormatter, GatewayError, ModelRouteDef, PlainRouteDef, Store, UnsupportedParamsPolicy } from '../../../src/sdk.js';
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
  /**
   * A stream that reads the upstream's bytes itself instead of decoded events (the
   * OpenAI pass-through forwards them as they are): one step per upstream read,
   * its frames what to write for it. `end` is the body's end (an event left without
   * its closing blank line).
   */
  readonly bytes?: { push(chunk: Uint8Array): StreamStep; end(): StreamStep };
  /** The frames that end a complete reply, carrying the billed usage and its cost (after any state it keeps is stored). */
  finish(usage: TokenUsage, cost: ChatCost): string[] | Promise<string[]>;
  /** The frames that end a broken reply: an explicit error, never a silent end. */
  fail(err: GatewayError): string[];
}

/** A non-streamed reply in the client's format. */
export interface ClientReply {
  usage: TokenUsage | undefined;
  /** The reply's text, to estimate usage when the upstream reported none. */
  text: string;
  /** The reply body (after any state it keeps is stored). */
  render(usage: TokenUsage, cost: ChatCost): unknown;
}

/** A non-streamed reply forwarded as the upstream's bytes, with only the gateway's members spliced in. */
export interface PassedReply {
  /** The upstream's usage (a pass-through needs one: a reply without it takes `response`). */
  usage: TokenUsage;
  /** The reply's JSON text: the upstream's, with the requested model and the usage's cost fields. */
  text(usage: TokenUsage, cost: ChatCost): string;
}

/** Upstream replies (through a dialect) → one client format. */
export interface ChatCodec {
  /** Throws when the upstream body is malformed. */
  response(body: string): ClientReply;
  /**
   * The same reply as `response` renders, read without parsing the body (formats/reply-scan.ts),
   * when the upstream speaks this format natively; undefined when the scan is not sure of the
   * body (not one valid JSON object, no usage, a member missing): `response` then parses it,
   * and refuses a malformed one. Throws InvalidUsage as `response` does.
   */
  passthrough?(body: string): PassedReply | undefined;
  stream(): ClientStream;
}

/** A request as it reached a format's route. */
export interface ParseInput {
  body: unknown;
  /** The body's JSON text as the client sent it (undefined when it was not JSON). */
  text?: string | undefined;
  headers: IncomingHttpHeaders;
  /** Route parameters (the Gemini format reads the model from the path). */
  params: Record<string, string>;
  query: Record<string, unknown>;
  /** The caller's org: state a format keeps (stored responses) is read org-scoped. */
  orgId: string;
}

/** What a format may use beyond the request: the shared store for the state it keeps, and the clock. */
export interface FormatServices {
  store: Store;
  now(): number;
  settings: ChatSettings;
}

/** `settings.chat` in gateway.yaml. */
export interface ChatSettings {
  /** Overrides the provider files' `unsupported_params` for every model when set; a project's own wins over it. */
  unsupported_params?: UnsupportedParamsPolicy;
  /** Output bound for requests that name none, unless their project sets its own (plugins/chat/default-max-tokens.ts); null: off. */
  default_max_tokens?: number | null;
  responses: {
    /** Days a stored response is kept (OpenAI keeps 30). */
    retention_days: number;
    /** Stored responses kept per org; past it the oldest go first. */
    max_per_org: number;
    /** A response whose stored form (its conversation and output) is larger is not stored (`store: false` in the reply). */
    max_stored_bytes: number;
    sweep_interval_ms: number;
  };
}

/**
 * A client-facing chat format: its endpoints, request and reply shape, served by
 * every chat model whatever its provider's dialect. Each lives in `formats/<client>/`
 * and is listed in `formats/index.ts`; the plugin registers its routes.
 */
export interface ClientFormat {
  readonly name: string;
  /** The routes clients of this format call, e.g. `/v1/chat/completions`. */
  readonly urls: readonly string[];
  /** Headers that may carry the key besides Bearer (`x-api-key` for Anthropic clients, `x-goog-api-key` for Google's). */
  readonly keyHeaders?: readonly string[];
  /** Query parameters that may carry the key when no header does (`key` for Google's REST clients). */
  readonly keyQuery?: readonly string[];
  /** Error bodies in this format's shape; OpenAI-style when absent. */
  readonly formatError?: ErrorFormatter;
  /** The dialect that speaks this format upstream: a request in this format goes to it untranslated. */
  readonly nativeDialect: string;
  /** Validates a request in this format (400 naming the field) and gives it in canonical form. */
  parse(input: ParseInput): ChatRequest | Promise<ChatRequest>;
  /** The client's name for a canonical field a provider cannot take (`response_format` → `text.format`). */
  clientParam?(canonical: string): string;
  /** The reply encoder for a dialect; `caller.orgId` scopes any state the format keeps. */
  codec(dialect: ChatDialect, req: ChatRequest, ctx: ReplyContext, caller: { orgId: string }): ChatCodec;
  /** Other routes of this format that take a model, with their own handler (Anthropic's token counting). */
  readonly modelRoutes?: readonly ModelRouteDef<ChatRequest>[];
  /** Routes of this format that call no model (a stored response's GET and DELETE). */
  readonly routes?: readonly PlainRouteDef[];
}
