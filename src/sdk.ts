/**
 * The one surface plugins import from the core. Everything a modality plugin needs —
 * the plugin API, errors, money, pricing, the provider model, upstream helpers, SSE,
 * storage records — is re-exported here, so the core's own modules can move or
 * change shape without touching a plugin. A plugin imports `../../src/sdk.js` and its
 * own files, nothing else under src/ (test/architecture.test.ts checks it).
 */

// Plugin API: what a plugin declares and what it is handed at registration.
export type {
  BodyParser, ErrorFormatter, GatewayPlugin, Meter, Metered, ModalityHandler, ModelRequest, ModelRouteDef, OrgRouteContext, OrgRouteDef,
  PlainRouteDef, PluginApi, PluginLogger, RespondContext, StreamOptions, TaskDef, TextSlot,
} from './pipeline/plugin.js';
export type { ModalityRules, ProviderCatalog } from './providers/catalog.js';
export type { LimitSpec } from './model/limits.js';
export type { GatewayConfig } from './config/gateway-config.js';
export type { ReplyFilter, RequestView, ShortCircuit, ShortCircuitContext, StageHook } from './pipeline/hooks.js';
export { settingsBlock } from './pipeline/plugin.js';
export { jsonTextSlots } from './guardrails/slots.js';
export { STAGES, type Stage } from './pipeline/stages.js';

// One request as it moves through the stages, as a plugin sees it: read-only. A plugin returns
// what it measured (Metered) and keeps its own per-request state in a slot (exchangeSlot).
export { elapsedMs, exchangeSlot, serverCut, type ExchangeSlot, type ExchangeView as Exchange, type TokenCounts } from './pipeline/exchange.js';

// Client-visible errors (each code has a row in docs/errors.md).
export { GatewayError, invalidField, type ErrorBody, type ErrorCode } from './lib/errors.js';

// Money (integer micro-USD; pico-USD while pricing) and prices from provider YAML.
export { displayUsd, formatUsd, microsToUsd, parseUsdToPicos, picosToMicros, picosToMicrosCeil, type Micros } from './lib/money.js';
export { costPicos, picosAt, pricesFor, type Consumption, type PriceSelector } from './providers/pricing.js';
export { estimateTokens, tokensForChars } from './lib/tokens.js';
// Counts an upstream reports (tokens, seconds): a negative, fractional or absurd one is a malformed reply.
export { InvalidUsage, MAX_REPORTED_SECONDS, MAX_REPORTED_TOKENS, reportedSeconds, reportedTokens } from './pipeline/usage.js';

// The provider model a route resolves to.
export type { Capabilities, EndpointDef, ModelDef, ModelRoute, PriceKey, PriceSet, PricingTier, ProviderDef, RetryPolicy, UnsupportedParamsPolicy } from './providers/types.js';

// Calling upstream and reading what comes back.
export { fillPath, upstreamText, type UpstreamRequest, type UpstreamResponse } from './pipeline/upstream.js';
export { upstreamJson } from './lib/upstream-json.js';
export type { UpstreamBody } from './pipeline/upstream-body.js';
// An endpoint's YAML request transform, its `$error` refusal a 400 on the field named.
export { applyRequestTransform, transformRefusal, type BuiltRequest } from './providers/transform.js';
export { formatSse, parseSseBlock, SseDecoder, type SseEvent } from './lib/sse.js';
// Reading JSON text without parsing it: its structure's character codes, whitespace, where a string ends.
export { CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE, skipJsonSpace, stringEnd } from './lib/json-text.js';

// Storage: the database, generated-media records, object storage.
export type { Org, Retention, Store } from './store/types.js';
export { logIdOf, type MediaRecord, type MediaStorage, type MediaStore } from './store/media.js';
export type { RecordStore, StoredRecord } from './store/records.js';
/** Opens a store by `database.url` (for tests and tools; a plugin is handed the gateway's store). */
export { openStore } from './store/index.js';
export { parseRange, type ByteRange, type ObjectBody, type ObjectStore } from './storage/object-store.js';
export { deleteExpiredMedia, LEASE_HELD_ELSEWHERE, underLease, type MediaSweepDeps, type MediaSweepOptions } from './storage/media-sweep.js';

// The response cache (docs/cache.md): a modality's canonical request and how it replays a stored reply.
export type { CacheDef, CacheRequest, ResponseCacheApi } from './pipeline/plugin.js';
export type { CacheEntry, CacheHit } from './model/cache.js';
export { captureBody, type CapturedBody } from './cache/capture.js';

// Small utilities.
export { newId } from './lib/ids.js';
export { Semaphore } from './lib/semaphore.js';
export type { StreamedReply } from './pipeline/streamed-reply.js';
