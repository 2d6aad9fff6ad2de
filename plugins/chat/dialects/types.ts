import type { ChatRequest } from '../validate.js';

/** Token counts as a provider reports them, in the gateway's terms. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's cache (priced as input_cache_read). */
  cachedTokens?: number;
  /** Prompt tokens written to the provider's cache (priced as input_cache_write). */
  cacheWriteTokens?: number;
}

/** What one upstream stream event becomes for an OpenAI-format client. */
export interface TranslatedEvent {
  /** `data:` payloads to forward, in OpenAI chunk format, already serialised. */
  chunks: string[];
  /** Usage, when this event carried it (cumulative counts). */
  usage?: TokenUsage;
  /** The OpenAI-format usage chunk (`choices: []`), without the gateway's cost fields. */
  usageChunk?: Record<string, unknown>;
  /** Completion tokens delivered by the chunks of this event (for billing an aborted stream). */
  deliveredTokens: number;
  /** True when the upstream signalled the end of the reply. */
  done: boolean;
  /** An upstream error inside the stream. */
  error?: string;
}

export interface StreamTranslator {
  onEvent(event: string | undefined, data: string): TranslatedEvent;
}

/**
 * A chat dialect: pure translation between the OpenAI chat format the client speaks
 * and an upstream's wire format. No I/O, no mutation of inputs.
 */
export interface ChatDialect {
  readonly name: string;
  /** The upstream body for a request, with the provider's model id. */
  requestBody(req: ChatRequest, upstreamModel: string): string;
  /** Variables for the endpoint's path template (`{model}`, `{action}`). */
  pathVars(req: ChatRequest, upstreamModel: string): Record<string, string>;
  /** A non-streamed upstream body as an OpenAI chat completion object plus its usage. */
  response(body: string, requestedModel: string): { completion: Record<string, unknown>; usage: TokenUsage | undefined };
  streamTranslator(requestedModel: string): StreamTranslator;
}
