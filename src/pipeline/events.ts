import type { FastifyRequest } from 'fastify';
import type { Exchange, ExchangeTelemetry, RequestTrace } from './exchange.js';

export type { ExchangeTelemetry, RequestTrace };
import type { LimitKind } from '../model/limits.js';
import type { ModelRoute } from '../providers/types.js';
import type { LogRow, } from '../store/types.js';
import type { FailureKind } from './upstream.js';
import type { UpstreamBody } from './upstream-body.js';

/** The kind of scope a limit belongs to (a label value of `tollgate_ratelimit_rejections_total`). */
export type LimitScopeType = 'key' | 'project';

/**
 * What the core tells metrics and traces about each request: the pipeline emits, the
 * telemetry listens (the core holds `ExchangeObserver | undefined`, so with telemetry
 * off every call site is one `?.` check, no allocation). Each method is called from
 * exactly one place:
 *
 * - `onRequestStart` — server.ts `onRequest` hook, as soon as the exchange exists (before auth).
 * - `onCreditReserved` / `onCreditSettled` — request-lifecycle.ts `RequestLifecycle.reserve`
 *   after a reservation is taken, and `settleCredit` when it ends (charged or released).
 * - `onAttemptStart` / `onAttemptEnd` — pipeline.ts `callUpstream`, around each upstream
 *   attempt (retries and fallbacks included). `onAttemptStart` returns headers the upstream
 *   request carries (W3C `traceparent`), or undefined.
 * - `onRequestEnd` — where the request-log row is queued (request-lifecycle.ts `RequestLifecycle.log`), with
 *   that row: metrics and the span's end are the same facts as the bill.
 * - `onRateLimitRejected` — the limits wiring, when a limit refuses a request.
 */
export interface ExchangeObserver {
  /** The request's route pattern, method and headers (an incoming `traceparent`) are read from `request`. */
  onRequestStart(ex: Exchange, request: FastifyRequest): void;
  onCreditReserved(ex: Exchange): void;
  onCreditSettled(ex: Exchange): void;
  onAttemptStart(ex: Exchange, route: ModelRoute): Record<string, string> | undefined;
  /**
   * The attempt just recorded in `ex.attempts` ended: `failure` says how it failed, or is
   * undefined for a usable response, whose `body` the plugin reads next (the upstream
   * part of the request ends when that body closes).
   */
  onAttemptEnd(ex: Exchange, failure: FailureKind | undefined, body: UpstreamBody | undefined): void;
  onRequestEnd(ex: Exchange, row: LogRow): void;
  onRateLimitRejected(kind: LimitKind, scope: LimitScopeType): void;
}


