import { GatewayError } from '../lib/errors.js';
import type { Micros } from '../lib/money.js';
import type { Verdict } from '../model/guardrails.js';
import type { ModelRoute } from '../providers/types.js';
import type { Project } from '../store/tenancy.js';
import type { ApiKeyRecord, LogRow, Org, UpstreamAttempt } from '../store/types.js';
import type { FailureKind } from '../providers/upstream-failure.js';
import type { CacheOutcome } from '../model/cache.js';
import type { CapturedBodies } from '../model/guardrails.js';
import type { TokenCounts } from '../model/records.js';

export type { TokenCounts };


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
  /** What the request was charged (the lifecycle records it: src/pipeline/request-lifecycle.ts). */
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
  bodies: CapturedBodies | undefined;
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

/**
 * What a `pre-upstream` hook may put on the exchange (`ex.replyFilter`) to see the reply
 * before the client does, streamed or not: a modality whose reply is text (chat) runs
 * its reply through it. Texts are the reply's JSON (a body, or SSE frames).
 */
export interface ReplyFilter {
  /**
   * A whole reply body → the body to send. Throws a GatewayError to refuse it (a
   * post-upstream block): the caller charges what the upstream charged and answers the error.
   */
  body(json: string): Promise<string>;
  /** One write of a streamed reply → what to write instead. */
  frames(text: string): string;
  /** Once a streamed reply is complete: the error that ends it instead of its closing frames (a block), or undefined. */
  end(): Promise<GatewayError | undefined>;
}

/** One request's trace (tracing.ts), as the telemetry drives it. */
export interface RequestTrace {
  /** Starts the child span of an upstream attempt; returns the headers that continue the trace upstream. */
  attemptStart(ex: Exchange, route: ModelRoute): Record<string, string>;
  attemptEnd(attempt: UpstreamAttempt | undefined, failure: FailureKind | undefined): void;
  /** `resolved`: the requested model is one the catalog serves (only then does it name the span). */
  end(ex: Exchange, row: LogRow, route: string, resolved: boolean): void;
}

/** Per-request telemetry state (`ex.telemetry`), created by `onRequestStart`. */
export interface ExchangeTelemetry {
  readonly route: string;
  /** When the first upstream attempt started (process.hrtime.bigint()). */
  upstreamStartHr: bigint | undefined;
  /** When the last upstream attempt ended: its failure, or the close of the answering body. */
  upstreamEndHr: bigint | undefined;
  /** True while the answering upstream body is being read. */
  bodyOpen: boolean;
  readonly trace: RequestTrace | undefined;
}
