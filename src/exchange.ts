import { GatewayError } from './errors.js';
import type { Micros } from './money.js';
import type { BodyCapture } from './guardrails/bodies.js';
import type { Verdict } from './guardrails/types.js';
import type { ReplyFilter } from './hooks.js';
import type { ModelRoute } from './providers/types.js';
import type { Project } from './store/tenancy.js';
import type { ApiKeyRecord, Org, UpstreamAttempt } from './store/types.js';
import type { ExchangeTelemetry } from './telemetry/events.js';
import type { CacheOutcome } from './cache/service.js';

/**
 * Tokens a request was billed for, by type, as its plugin metered them. `cachedInput`
 * is the part of `input` read from the provider's cache and `reasoning` the part of
 * `output` spent thinking: parts, not additions.
 */
export interface TokenCounts {
  input: number;
  output: number;
  cachedInput: number;
  reasoning: number;
}

/**
 * Everything the gateway knows about one request as it moves through the stages.
 * Created when the request arrives; the log row is built from it when the reply ends.
 */
export interface Exchange {
  readonly id: string;
  readonly startedAt: number;
  /** High-resolution start, for durations. */
  readonly startedHr: bigint;
  modality: string;
  org: Org | undefined;
  apiKey: ApiKeyRecord | undefined;
  /** The key's project (the console's workspace). */
  project: Project | undefined;
  requestedModel: string | undefined;
  /** The route that answered (or last tried). */
  route: ModelRoute | undefined;
  /** The deployment (gateway.yaml `providers.<id>.keys[].name`) that served the request, when the gateway's key did. */
  deployment?: string | undefined;
  attempts: UpstreamAttempt[];
  /** Micro-USD held for this request; 0 when nothing was reserved. */
  reservedMicros: Micros;
  /** True when the org's own provider key serves the request (not debited). */
  byok: boolean;
  /** What the request was charged (the lifecycle records it: src/request-lifecycle.ts). */
  costMicros: Micros;
  costEstimated: boolean;
  errorCode: string | undefined;
  /** Stamped by the core at the reply's first byte (StreamedReply's first write, or a reply's send). */
  ttfbMs: number | undefined;
  /** True when the reply is a token stream (its ttfbMs is the time to the first token). */
  streamed: boolean;
  /** The billed token counts, as the plugin's result reported them (none for modalities priced otherwise). */
  usage: TokenCounts | undefined;
  prompt: string | undefined;
  /** The request-log row's `extra`: what the plugin's parse and result reported, and the core's own notes. */
  extra: Record<string, unknown> | undefined;
  /** Per-plugin state, keyed by symbols the plugins own (see `ExchangeSlot`). */
  readonly slots: Map<symbol, unknown>;
  /** The project's guardrail verdicts (docs/guardrails.md); undefined when it has none. */
  guardrails: Verdict[] | undefined;
  /** Set by a pre-upstream hook (guardrails) to see the reply before the client does. */
  replyFilter: ReplyFilter | undefined;
  /** The request's and reply's bodies, captured when the project's `body_logging` is on. */
  bodies: BodyCapture | undefined;
  /** Aborted when the client goes away or the server shuts down; cancels the upstream call. */
  readonly abort: AbortController;
  /** Per-request state of metrics and traces; undefined when telemetry is off. */
  telemetry: ExchangeTelemetry | undefined;
  /** What the response cache did (docs/cache.md); undefined when it is off for the request. */
  cache?: CacheOutcome | undefined;
}

export function newExchange(id: string, modality: string, now: number): Exchange {
  return {
    id, startedAt: now, startedHr: process.hrtime.bigint(), modality, org: undefined, apiKey: undefined, project: undefined,
    requestedModel: undefined, route: undefined, attempts: [], reservedMicros: 0, byok: false, costMicros: 0,
    costEstimated: false, errorCode: undefined, ttfbMs: undefined, streamed: false, usage: undefined,
    prompt: undefined, extra: undefined, slots: new Map(), guardrails: undefined, replyFilter: undefined, bodies: undefined, abort: new AbortController(), telemetry: undefined,
  };
}

/**
 * What a plugin sees of an exchange: read-only. A plugin reports what it measured by
 * returning it (`Metered`), and keeps its own per-request state in an `ExchangeSlot`.
 */
export type ExchangeView = Readonly<Exchange>;

/**
 * A plugin's typed per-request state: `slot<T>(name)` makes a key only its maker holds,
 * so two plugins never see each other's state and the state goes with the exchange.
 */
export interface ExchangeSlot<T> {
  get(ex: ExchangeView): T | undefined;
  set(ex: ExchangeView, value: T): void;
  delete(ex: ExchangeView): void;
}

export function exchangeSlot<T>(name: string): ExchangeSlot<T> {
  const key = Symbol(name);
  return {
    get: (ex) => ex.slots.get(key) as T | undefined,
    set: (ex, value) => void ex.slots.set(key, value),
    delete: (ex) => void ex.slots.delete(key),
  };
}

/** Stamps the time to the reply's first byte, once (the core calls it at the first write). */
export function stampFirstByte(ex: Exchange): void {
  if (ex.ttfbMs === undefined) ex.ttfbMs = elapsedMs(ex);
}

/** Milliseconds since the exchange started. */
export function elapsedMs(ex: Exchange): number {
  return Number(process.hrtime.bigint() - ex.startedHr) / 1e6;
}

/**
 * Cuts a request the server cannot wait for any longer (the drain deadline at shutdown):
 * its upstream call is cancelled like a client's leaving, but the client is still there
 * and is told why (`drain_timeout`).
 */
export function cutByServer(ex: Exchange): void {
  if (!ex.abort.signal.aborted) ex.abort.abort(new GatewayError('drain_timeout'));
}

/** The error to tell the client when the server cut the exchange; undefined when it was not cut (or its client left). */
export function serverCut(ex: Exchange): GatewayError | undefined {
  const reason: unknown = ex.abort.signal.reason;
  return ex.abort.signal.aborted && reason instanceof GatewayError ? reason : undefined;
}
