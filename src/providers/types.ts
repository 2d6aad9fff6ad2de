import type { UpstreamSigner } from './aws-sigv4.js';
import type { CompiledTransforms } from './transform.js';
import type { GoogleAuthDef } from '../config/google-config.js';
import type { Deployment } from '../model/routing.js';

/** Provider definitions as data: the shapes of providers/*.yaml once loaded. */

export interface RetryPolicy {
  attempts: number;
  backoffMs: number;
  on: ReadonlyArray<'connect_error' | '5xx' | '429'>;
}

export interface EndpointDef {
  /** The endpoint's key in YAML. */
  name: string;
  /** The modality it serves: its name unless YAML says `modality:` (an alternative endpoint, e.g. a provider's own /responses). */
  modality: string;
  method: 'POST' | 'GET' | 'PUT';
  /** Path template relative to the provider's base URL; `{model}` is the upstream model id. */
  path: string;
  query: Record<string, string>;
  /** Wait for the response headers and for each later gap between body chunks. */
  timeoutMs: number;
  /**
   * For a streamed request, the wait from sending to the first body byte (headers
   * included). A stall here is a `timeout` failure that falls back, since nothing
   * reached the client.
   */
  firstByteTimeoutMs: number | undefined;
  retry: RetryPolicy;
  /** Whether a failure before the first byte may move on to the model's next route. */
  fallback: boolean;
  dialect: string | undefined;
  /** How an uploaded file goes upstream: as multipart/form-data or as the raw body; undefined when the endpoint takes no file. */
  upload: 'multipart' | 'raw' | undefined;
  /** Declarative request/response transforms (JSONata), compiled at load; see src/providers/transform.ts. */
  transforms: CompiledTransforms;
  /** Options of the endpoint's dialect (YAML `dialect_options`), e.g. an Anthropic body version for a cloud's Claude. */
  dialectOptions: Record<string, string>;
  /** Models name this endpoint (YAML model `endpoint`): it serves them only, never as another model's alternative endpoint. */
  namedByModels: boolean;
}

/** Client credentials for Microsoft Entra ID tokens (src/providers/entra.ts). Secret: never logged. */
export interface EntraCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string;
}

/** One `errors` rule of a provider file. */
export interface ErrorRule {
  status: number | undefined;
  code: 'content_blocked' | 'upstream_unauthorized' | 'upstream_rate_limited' | 'upstream_error';
  when: (errorBody: unknown) => Promise<boolean>;
}

/** What a chat request with a parameter the provider cannot take gets (docs/chat.md, Unsupported parameters). */
export const UNSUPPORTED_PARAMS_POLICIES = ['error', 'drop', 'translate'] as const;
export type UnsupportedParamsPolicy = (typeof UNSUPPORTED_PARAMS_POLICIES)[number];

export interface ProviderDef {
  id: string;
  name: string;
  file: string;
  baseUrl: string;
  /**
   * A plain key header (`header`, `format`), or a reusable auth scheme that makes the
   * credentials per request (`scheme`, see src/providers/upstream-auth.ts; aws-sigv4 signs through `signer`).
   */
  auth: { header: string; format: string; scheme?: GoogleAuthDef };
  /** Microsoft Entra ID client credentials and scope (gateway.yaml `entra`, file `auth.entra`): bearer tokens instead of the key. */
  entra?: EntraCredentials | undefined;
  /** The provider file's `errors`: error bodies that map to a gateway code (e.g. Azure's content_filter → content_blocked). */
  errorRules?: ErrorRule[] | undefined;
  /** Signs every request instead of a key header, when `auth.scheme` names a scheme (aws-sigv4); built per gateway (it caches credentials). */
  signer?: UpstreamSigner | undefined;
  /**
   * The failure kind of an error reply by the error type the provider names in a header
   * (`error_types.header`/`error_types.kinds`, e.g. Bedrock's ModelNotReadyException, a 429
   * that is retried as a 5xx); undefined leaves the status to decide.
   */
  errorKind?: ((headers: Record<string, string | string[] | undefined>) => '5xx' | '429' | '4xx' | undefined) | undefined;
  /** True when a 4xx error body (other than 401/403) means the provider refused the key (`auth.rejected_when`). */
  keyRejected: ((errorBody: unknown) => Promise<boolean>) | undefined;
  /** The gateway's own key for this provider (from gateway.yaml), if any. */
  apiKey: string | undefined;
  /**
   * The keys traffic is spread over (gateway.yaml `keys`, or one `default` with `api_key`);
   * absent for a provider built without gateway.yaml (tests): one deployment of `apiKey`.
   */
  deployments?: readonly Deployment[] | undefined;
  headers: Record<string, string>;
  endpoints: Record<string, EndpointDef>;
  /** `unsupported_params` of the provider file: its models' default. */
  unsupportedParams?: UnsupportedParamsPolicy | undefined;
}

export type PriceKey =
  | 'prompt' | 'completion' | 'image' | 'request' | 'input_cache_read' | 'input_cache_write' | 'web_search'
  | 'internal_reasoning' | 'video_per_second' | 'audio_music_per_generation' | 'input_character' | 'audio_second';

export interface Capabilities {
  streaming: boolean; vision: boolean; documents: boolean; cancellation: boolean;
  tools: boolean; parallelToolCalls: boolean; reasoning: boolean;
}

export interface ModelDef {
  id: string;
  upstreamId: string;
  /** The `{deployment}` path variable (gateway.yaml `deployments`, else the upstream id); set only for providers whose paths use it. */
  deployment?: string | undefined;
  modality: string;
  /** The endpoint serving it when not the one named after its modality (YAML `endpoint`): a provider with two wire formats for one modality (Vertex: Gemini and Claude). */
  endpoint: string | undefined;
  name: string;
  aliases: string[];
  created: number;
  description: string;
  family: string;
  inputModalities: string[];
  outputModalities: string[];
  tokenizer: string;
  isModerated: boolean;
  contextLength: number;
  maxOutputTokens: number | undefined;
  /** Anthropic-family rule: the upstream refuses a request without max_tokens. */
  requiresMaxTokens: boolean;
  /** The field an OpenAI-dialect upstream takes the output limit in (reasoning models: max_completion_tokens). */
  maxTokensParam: 'max_tokens' | 'max_completion_tokens';
  /** `unsupported_params` of the model in YAML (undefined: the provider's). */
  unsupportedParams?: UnsupportedParamsPolicy | undefined;
  perRequestLimits: Record<string, string>;
  supportedParameters: string[];
  jsonOutput: boolean;
  structuredOutputs: boolean;
  capabilities: Capabilities;
  deprecatedAt: string | undefined;
  deactivatedAt: string | undefined;
  stability: string;
  /** Prices as written in YAML (USD strings), for the catalogue. */
  pricing: Partial<Record<PriceKey, string>>;
  /** The same prices as pico-USD, for metering. */
  pricePicos: Partial<Record<PriceKey, bigint>>;
  /** Prices replacing the base ones above a prompt size, lowest threshold first (see pricing.ts). */
  pricingTiers: PricingTier[];
  /** Named price sets a request may ask for (images: `quality/size`). */
  pricingVariants: Record<string, PriceSet>;
}

/** Prices as YAML wrote them (for the catalogue) and as pico-USD (for metering). */
export interface PriceSet {
  pricing: Partial<Record<PriceKey, string>>;
  pricePicos: Partial<Record<PriceKey, bigint>>;
}

export interface PricingTier extends PriceSet {
  /** The tier applies to a request whose prompt has more tokens than this. */
  abovePromptTokens: number;
}

/** One way to serve a model: a provider, its endpoint for the model's modality, and the model there. */
export interface ModelRoute {
  provider: ProviderDef;
  endpoint: EndpointDef;
  model: ModelDef;
}
