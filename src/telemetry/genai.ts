import type { Exchange } from '../pipeline/exchange.js';
import { microsToUsd } from '../lib/money.js';
import type { ModelRoute } from '../providers/types.js';
import type { LogRow, Org, UpstreamAttempt } from '../store/types.js';
import type { FailureKind } from '../pipeline/upstream.js';

/**
 * The OpenTelemetry GenAI semantic-convention names the spans use. They are still
 * "incubating" upstream, whose own advice is to copy them rather than import the
 * incubating entry point (genai.test.ts checks them against the package).
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  requestStream: 'gen_ai.request.stream',
  responseModel: 'gen_ai.response.model',
  responseTimeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  usageCacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  usageReasoningOutputTokens: 'gen_ai.usage.reasoning.output_tokens',
} as const;

export type SpanAttributes = Record<string, string | number | boolean>;

/** Longest client-supplied string put in a span (a model name a client made up). */
const MAX_ATTRIBUTE_CHARS = 256;
/** Longest prompt text put in a span, when prompts are allowed. */
const MAX_PROMPT_CHARS = 4096;

/**
 * Whether a request's prompt text may go into its span: only when gateway.yaml asks for
 * it (`telemetry.otlp.include_prompts`) and the org keeps its logs (retention
 * `standard`). An org with retention `none` never has its prompt exported.
 */
export function promptAllowed(includePrompts: boolean, org: Pick<Org, 'retention'> | undefined): boolean {
  return includePrompts && org?.retention === 'standard';
}

/**
 * `gen_ai.operation.name` of a modality. `chat` and `embeddings` are the convention's
 * own values; the convention has none yet for speech, transcription or music, so
 * those keep their modality name (it allows custom values).
 */
export function operationName(modality: string): string {
  return modality;
}

/** `gen_ai.provider.name`: the convention's well-known value for the providers that have one, else the provider id. */
export function genAiProviderName(providerId: string): string {
  return WELL_KNOWN_PROVIDERS[providerId] ?? providerId;
}

const WELL_KNOWN_PROVIDERS: Readonly<Record<string, string>> = { google: 'gcp.gemini', mistral: 'mistral_ai', xai: 'x_ai' };

const clip = (s: string, max: number): string => (s.length > max ? s.slice(0, max) : s);

/**
 * The request span's name: `{gen_ai.operation.name} {gen_ai.request.model}` for a
 * model request whose model resolved (`chat gpt-4o-mini`); the operation alone when it
 * did not (a made-up model name never becomes a span name); `{method} {route}` for
 * every other request.
 */
export function requestSpanName(ex: Exchange, method: string, route: string, resolved: boolean): string {
  if (ex.requestedModel === undefined) return `${method} ${route}`;
  const op = operationName(ex.modality);
  return resolved ? `${op} ${clip(ex.requestedModel, MAX_ATTRIBUTE_CHARS)}` : op;
}

/** The request span's attributes, from the same facts as its log row. */
export function requestAttributes(ex: Exchange, row: LogRow, route: string, includePrompt: boolean): SpanAttributes {
  const a: SpanAttributes = {
    'http.route': route,
    'http.response.status_code': row.status,
    'tollgate.request_id': row.requestId,
    'tollgate.cost_micros': row.costMicros,
    'tollgate.cost_usd': microsToUsd(row.costMicros),
    'tollgate.attempts': row.attempts.length,
  };
  if (row.orgId) a['tollgate.org_id'] = row.orgId;
  if (row.byok) a['tollgate.byok'] = true;
  if (row.costEstimated) a['tollgate.cost_estimated'] = true;
  if (row.errorCode) a['error.type'] = row.errorCode;
  else if (row.status >= 400) a['error.type'] = String(row.status);
  if (ex.requestedModel === undefined) return a;
  a[GEN_AI.operationName] = operationName(ex.modality);
  a[GEN_AI.requestModel] = clip(ex.requestedModel, MAX_ATTRIBUTE_CHARS);
  if (ex.route) {
    a[GEN_AI.providerName] = genAiProviderName(ex.route.provider.id);
    if (row.status < 400) a[GEN_AI.responseModel] = ex.route.model.upstreamId;
  }
  if (ex.usage) {
    a[GEN_AI.usageInputTokens] = ex.usage.input;
    a[GEN_AI.usageOutputTokens] = ex.usage.output;
    if (ex.usage.cachedInput > 0) a[GEN_AI.usageCacheReadInputTokens] = ex.usage.cachedInput;
    if (ex.usage.reasoning > 0) a[GEN_AI.usageReasoningOutputTokens] = ex.usage.reasoning;
  }
  if (ex.streamed) {
    a[GEN_AI.requestStream] = true;
    if (row.ttfbMs !== null) a[GEN_AI.responseTimeToFirstChunk] = row.ttfbMs / 1000;
  }
  if (includePrompt && row.prompt) a['tollgate.prompt'] = clip(row.prompt, MAX_PROMPT_CHARS);
  return a;
}

/** An upstream attempt's span: `{operation} {upstream model}`, with the provider and its server. */
export function attemptSpanName(ex: Exchange, route: ModelRoute): string {
  return `${operationName(ex.modality)} ${route.model.upstreamId}`;
}

export function attemptStartAttributes(ex: Exchange, route: ModelRoute): SpanAttributes {
  const url = new URL(route.provider.baseUrl);
  return {
    [GEN_AI.operationName]: operationName(ex.modality),
    [GEN_AI.providerName]: genAiProviderName(route.provider.id),
    [GEN_AI.requestModel]: route.model.upstreamId,
    'server.address': url.hostname,
    'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    'tollgate.provider': route.provider.id,
    'tollgate.attempt': ex.attempts.length + 1,
  };
}

/** What ended an attempt: its HTTP status, and the failure kind when it failed (no provider text: it may echo a prompt). */
export function attemptEndAttributes(attempt: UpstreamAttempt | undefined, failure: FailureKind | undefined): SpanAttributes {
  const a: SpanAttributes = {};
  if (attempt?.status != null) a['http.response.status_code'] = attempt.status;
  if (failure) a['error.type'] = attempt?.status != null ? String(attempt.status) : failure;
  return a;
}
