import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode, GatewayError } from '../lib/errors.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { Exchange, ExchangeView, TokenCounts } from './exchange.js';
import type { ModalityRules, ProviderCatalog } from '../providers/catalog.js';
import type { Micros } from '../lib/money.js';
import type { EndpointDef, ModelRoute } from '../providers/types.js';
import type { ObjectStore } from '../storage/object-store.js';
import type { Org, Store } from '../store/types.js';
import type { StreamedReply } from './streamed-reply.js';
import type { UpstreamRequest, UpstreamResponse } from './upstream.js';
import type { CacheHit } from '../model/cache.js';

/** What every model request tells the core once its plugin has validated it. */
export interface ModelRequest {
  /** The model id as the client asked for it (may be `provider/model`). */
  model: string;
  /** Text kept in the request log (prompt), where the modality has one. */
  prompt?: string;
  /** Fields for the request-log row's `extra` known once the request is validated (kept also when it fails later). */
  logExtra?: Record<string, unknown>;
}

/**
 * A piece of a request's text, format-free: what a guardrail reads and may rewrite
 * (mask). A modality lists its slots through `ModalityHandler.texts`.
 */
export interface TextSlot {
  get(): string;
  set(text: string): void;
  /**
   * True for a second copy of text another slot holds (a chat request's canonical form
   * beside the native body it was translated from): masked alike, neither counted nor
   * sent to a webhook twice.
   */
  copy?: boolean;
}

/**
 * What a plugin measured for the reply it wrote, returned to the core, which records it
 * (src/pipeline/request-lifecycle.ts) and charges it. The cost is either pico-USD, which the core
 * rounds to micro-USD once, or micro-USD where the plugin's own pricing already rounded
 * it (chat rounds input and output apart, so that the figures its client sees add up).
 */
export type Metered = MeteredFacts & ({ costPicos: bigint; costMicros?: never } | { costMicros: Micros; costPicos?: never });

interface MeteredFacts {
  /** True when usage was counted by the gateway, not reported by the upstream. */
  estimated?: boolean;
  /** The billed token counts, by type (metrics, traces, the row's token columns, the `tpm` limits). */
  usage?: TokenCounts;
  /** Fields for the request-log row's `extra` (what the charge is audited by). */
  extra?: Record<string, unknown>;
  /** Why a reply that started did not complete (the client left, a cut, a broken upstream): the row's error code. It is still charged. */
  errorCode?: ErrorCode;
}

/**
 * A reply's running bill, for what must be known before `respond` returns. A plugin whose
 * reply has started (a stream's first tokens are out) tells the core how to bill it so
 * far; should `respond` then throw, the core charges that instead of nothing. A result
 * `respond` returns replaces it.
 */
export interface Meter {
  /** How to bill the reply if it fails from here on; called at most once, only then. */
  sofar(bill: () => Metered): void;
}

/** How a streamed reply is opened. */
export interface StreamOptions {
  /** The reply is a token stream: its time to first byte is the time to the first token (metrics, traces). */
  tokens?: boolean;
}

export interface RespondContext<P extends ModelRequest> {
  /** The exchange, read-only: what the reply measured is returned (`Metered`), not written here. */
  ex: ExchangeView;
  parsed: P;
  route: ModelRoute;
  upstream: UpstreamResponse;
  request: FastifyRequest;
  reply: FastifyReply;
  /** The reply's running bill, for a reply that may fail after it started (see Meter). */
  meter: Meter;
  /**
   * Starts a streamed 200 reply with these headers: backpressure, the stall watchdog, and
   * whether its end reached the client. The core stamps the time to first byte at its first write.
   */
  openStream(headers: Record<string, string>, opts?: StreamOptions): StreamedReply;
}

/**
 * A modality's part of a model request, called by the core at its stages:
 * `parse` (pre-upstream: validation), `maxCostPicos` (before reservation),
 * `buildUpstream` (upstream), `respond` (post-upstream: reply and metering).
 */
export interface ModalityHandler<P extends ModelRequest> {
  readonly modality: string;
  /** Validates the client's body; throws a GatewayError (400) on bad input. Nothing is charged. */
  parse(body: unknown, request: FastifyRequest): P | Promise<P>;
  /**
   * The provider endpoint this request uses on a route, when not the one named after
   * its modality: another endpoint of the same modality on the route's provider (e.g.
   * the provider's own /responses for a Responses API client). Undefined keeps the route's.
   */
  endpoint?(parsed: P, route: ModelRoute): EndpointDef | undefined;
  /**
   * The request's text (messages, inputs, speech input), for the project's guardrails
   * (docs/guardrails.md): they see text, never a format. Absent: the modality carries
   * no text a guardrail checks.
   */
  texts?(parsed: P): TextSlot[];
  /** Checks the request against the chosen model (e.g. a parameter the model refuses); throws a GatewayError. */
  checkRoute?(parsed: P, route: ModelRoute): void;
  /** The most this request can cost on this route, in pico-USD: what is reserved before the call. */
  maxCostPicos(parsed: P, route: ModelRoute): bigint;
  /**
   * The most tokens (input + output) this request can use on this route: what a `tpm`
   * limit reserves before the call (docs/limits.md). Absent: 0 is reserved and the
   * metered tokens (`Metered.usage`) still count once the request finishes.
   */
  maxTokens?(parsed: P, route: ModelRoute): number;
  buildUpstream(parsed: P, route: ModelRoute): UpstreamRequest | Promise<UpstreamRequest>;
  /** Writes the reply from a successful (2xx) upstream response and returns what it measured (cost, usage, log fields). */
  respond(ctx: RespondContext<P>): Promise<Metered>;
  /**
   * Whether this route answers the request without calling upstream (e.g. a token count
   * the gateway estimates where the provider has no endpoint for it): the pipeline then
   * skips the call, and `respondLocally` writes the reply. Absent: every route calls upstream.
   */
  servedLocally?(parsed: P, route: ModelRoute): boolean;
  /** Writes the reply of a route `servedLocally` took, and returns what it cost. */
  respondLocally?(ctx: Omit<RespondContext<P>, 'upstream' | 'openStream'>): Promise<Metered>;
  /** The error for a model this endpoint does not serve, when the modality's contract differs from 404 model_not_found. */
  unknownModel?(model: string): GatewayError;
  /** Upstream timeout override for this request (ms), e.g. a test-configurable music wait. */
  timeoutMs?(route: ModelRoute): number | undefined;
}

export interface ModelRouteDef<P extends ModelRequest> {
  method: 'POST';
  url: string;
  /** Body limit for this route, when it differs from `server.body_limit_bytes`. */
  bodyLimit?: number;
  /** Headers that may carry the key besides `Authorization: Bearer` (lower-case: `x-api-key`, `x-goog-api-key`). */
  keyHeaders?: readonly string[];
  /** Query parameters that may carry the key when no header does (the Gemini routes' `?key=`); the server log redacts them. */
  keyQuery?: readonly string[];
  /** Error body in this route's client format (e.g. Anthropic's); OpenAI-style when absent. */
  formatError?: ErrorFormatter;
  handler: ModalityHandler<P>;
}

/** Renders a gateway error in a route's own client format. The status and code stay the gateway's. */
export type ErrorFormatter = (err: GatewayError) => unknown;

/** Parses a request body of one content type (e.g. multipart) for the routes that accept it. */
export type BodyParser = (request: FastifyRequest, payload: IncomingMessage) => Promise<unknown>;

export interface PlainRouteDef {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  /** Modality recorded in the request log for this route. */
  modality: string;
  /** Whether the route needs a bearer key (every /v1 route does, unless it says otherwise). */
  auth: boolean;
  /** Headers that may carry the key besides `Authorization: Bearer`. */
  keyHeaders?: readonly string[];
  /** Query parameters that may carry the key when no header does. */
  keyQuery?: readonly string[];
  /** Error body in this route's client format; OpenAI-style when absent. */
  formatError?: ErrorFormatter;
  handler(ex: ExchangeView, request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
}

/** Who calls a plugin's management route: the org (checked by the core) and the caller's role there. */
export interface OrgRouteContext {
  org: Org;
  /** The console user (or the owner of the management token) calling. */
  userId: string;
  /** `operator`: an instance operator, who holds every role in every org. */
  role: 'owner' | 'admin' | 'member' | 'operator';
}

/**
 * A management route of a plugin, served at `/api/v1/orgs/:org<url>` for the web
 * console. The core authenticates the caller (session cookie or management token),
 * refuses cross-origin writes, answers 404 when the org is not the caller's and 403
 * when the role is too low, validates `schema` and lists the route in the OpenAPI
 * document; the handler only ever sees its own org.
 */
export interface OrgRouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path under /api/v1/orgs/:org, e.g. `/music/:id/content`. */
  url: string;
  /** The least role that may call it. */
  role: 'member' | 'admin' | 'owner';
  /** One line for the OpenAPI document. */
  summary: string;
  /** Groups the route in the OpenAPI document (default: `plugins`). */
  tag?: string;
  /** JSON Schemas of the query, path parameters (`org` plus the url's own), body and responses. */
  schema?: { querystring?: Record<string, unknown>; params?: Record<string, unknown>; body?: Record<string, unknown>; response?: Record<number, Record<string, unknown>> };
  handler(ctx: OrgRouteContext, request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
}

/** The services a plugin may use, handed to it at registration. */
export interface PluginApi {
  readonly config: GatewayConfig;
  readonly catalog: ProviderCatalog;
  readonly store: Store;
  /** The plugin's validated `settings.<name>` block, schema defaults applied. */
  readonly settings: unknown;
  /** Object storage when `storage.s3` is configured. */
  readonly objectStore: ObjectStore | undefined;
  /** The server log (structured data first, then the message). */
  readonly log: PluginLogger;
  /** The gateway's clock (ms since epoch); injectable in tests. */
  now(): number;
  /**
   * A periodic maintenance task (e.g. a retention sweep). The server runs it every
   * `intervalMs`; `gateway sweep` runs every task once, on demand.
   */
  task(def: TaskDef): void;
  /** Registers a hook on a named stage; an unknown stage name fails the boot. */
  hook(stage: string, fn: StageHook): void;
  /** A route that calls a model upstream through the core's full pipeline. */
  modelRoute<P extends ModelRequest>(def: ModelRouteDef<P>): void;
  /** A route that does not call upstream (history lists, downloads, catalogues). */
  route(def: PlainRouteDef): void;
  /** A management route for the web console, scoped to one org by the core (see OrgRouteDef). */
  orgRoute(def: OrgRouteDef): void;
  /** Work to do when the gateway stops (after in-flight requests finished). */
  onClose(fn: () => Promise<void> | void): void;
  /**
   * Accepts bodies of another content type (JSON is built in). The parser may stream
   * the payload elsewhere (e.g. a size-capped temp file) rather than hold it in memory;
   * throw a GatewayError for a bad body.
   */
  bodyParser(contentType: string | RegExp, parser: BodyParser): void;
  /** The response cache (docs/cache.md): a modality puts it in front of its handler and offers its replies to it. */
  readonly cache: ResponseCacheApi;
}

export interface PluginLogger {
  info(data: object, msg: string): void;
  warn(data: object, msg: string): void;
  error(data: object, msg: string): void;
}

export interface TaskDef {
  name: string;
  intervalMs: number;
  /** Returns a one-line summary of what it did, for logs and the CLI. */
  run(): Promise<string>;
}

/** A plugin's `settingsSchema`: an object of these fields and no others (give each its default, so the block may be omitted). */
export const settingsBlock = (properties: Record<string, object>): object => ({ type: 'object', additionalProperties: false, properties });

export interface GatewayPlugin {
  readonly name: string;
  /** The modalities this plugin serves, with what a provider file needs to serve them. */
  readonly modalities: Readonly<Record<string, ModalityRules>>;
  /** JSON Schema of the plugin's `settings.<name>` block in gateway.yaml (defaults applied); none means no settings. */
  readonly settingsSchema?: object;
  register(api: PluginApi): void | Promise<void>;
}

// The response cache as plugins see it (src/cache/ implements it; docs/cache.md).

/** What a modality tells the cache about one request (its plugin decides what is canonical). */
export interface CacheRequest {
  /** Everything that changes the reply, the model aside (the core adds the model as resolved). Key order never matters. */
  key: unknown;
  /** Why the request is left out unless its settings say `cache_all` (`n` > 1, a tool result marked uncacheable). */
  uncacheable?: string | undefined;
  /** The request's temperature, checked against `max_temperature`. */
  temperature?: number | undefined;
  /** For semantic lookups: the last user turn, and everything before it (earlier turns and parameters: matched exactly). */
  semantic?: { text: string; prefix: unknown } | undefined;
}

/** A modality's part of the cache: what its canonical request is, and how a stored reply is replayed. */
export interface CacheDef<P extends ModelRequest, E> {
  request(parsed: P): CacheRequest | undefined;
  /** Writes the stored reply as this request's (its own format, streamed or not) and returns its charge (`hit.price` of the original). */
  replay(ctx: Omit<RespondContext<P>, 'upstream'>, hit: CacheHit<E>): Promise<Metered>;
}

/** The cache as plugins see it (src/sdk.ts). */
export interface ResponseCacheApi {
  /** The handler with the cache in front of it: hits answered without an upstream call, misses stored once billed. */
  cached<P extends ModelRequest, E>(handler: ModalityHandler<P>, def: CacheDef<P, E>): ModalityHandler<P>;
  /** Whether this request's reply is to be stored: the plugin then offers its format-neutral form. */
  wants(ex: ExchangeView): boolean;
  /** The reply's format-neutral form, stored once the reply reached the client and was billed. */
  offer<E>(ex: ExchangeView, body: E): void;
}

// Stage hooks (src/pipeline/hooks.ts runs them).

/**
 * What a `pre-upstream` hook returns to answer the request itself (a cache hit, a
 * guardrail's own reply): no upstream call is made, and the request is charged what
 * `respond` returns (0n: nothing) through the same settle and log as any other.
 * A hook that refuses a request throws a GatewayError instead: nothing is charged.
 */
export interface ShortCircuit {
  /** Writes the reply (JSON, or a stream through `ctx.openStream`) and returns what it cost. */
  respond(ctx: ShortCircuitContext): Promise<Metered>;
}

/** A short-circuit's reply context: a model request's, without an upstream response. */
export type ShortCircuitContext = Omit<RespondContext<ModelRequest>, 'upstream'>;

/** What a hook may read of a model request beyond its parsed form: its text, format-free, and the body as the client sent it. */
export interface RequestView {
  /** The request's text slots (`ModalityHandler.texts`); none when the modality carries no text. */
  texts(): TextSlot[];
  /** The client's parsed body. */
  body(): unknown;
}

/**
 * A stage hook. `request` is the validated model request on the model stages
 * (`pre-upstream` … `billing`), undefined on `pre-auth`, `auth` and `post-billing`
 * and on routes that do not call a model. Only a `pre-upstream` hook's ShortCircuit is
 * honoured; the first hook that returns one ends the stage.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` lets a hook that answers nothing be written without a return (undefined would not)
export type StageHook = (ex: ExchangeView, request?: ModelRequest, view?: RequestView) => void | ShortCircuit | Promise<void | ShortCircuit>;

/** The core's own hooks (the response cache, guardrails) record on the exchange itself; a plugin's StageHook is one of them. */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` lets a hook that answers nothing be written without a return (undefined would not)
export type CoreStageHook = (ex: Exchange, request?: ModelRequest, view?: RequestView) => void | ShortCircuit | Promise<void | ShortCircuit>;
