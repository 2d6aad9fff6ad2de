import { CacheMetrics } from './cache-metrics.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TokenCounts } from '../pipeline/exchange.js';
import type { Micros } from '../lib/money.js';
import type { LimitKind } from '../model/limits.js';
import type { LimitScopeType } from '../pipeline/events.js';
import { RoutingMetrics, type DeploymentSource } from './routing-metrics.js';

/** Seconds. Requests span a cached embedding (milliseconds) to a music generation (minutes). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** The gateway's own time is meant to be well under a millisecond. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

const TOKEN_TYPES = [['input', 'input'], ['output', 'output'], ['cachedInput', 'cached_input'], ['reasoning', 'reasoning']] as const;

/** Everything one finished request adds to the metrics: the facts of its log row, with bounded labels. */
export interface FinishedRequest {
  route: string;
  model: string;
  provider: string;
  status: string;
  code: string;
  durationS: number;
  /** Time with an upstream request open (first attempt to the end of the answering body); 0 when none was made. */
  upstreamS: number;
  /** Time to the first token of a streamed reply, when it was one. */
  ttftS: number | undefined;
  usage: TokenCounts | undefined;
  costMicros: Micros;
  byok: boolean;
}

/** Gauges read from the gateway when scraped. */
export interface MetricSources {
  requestLogDepth(): number;
  requestsInFlight(): number;
}

/** A per-(model, provider) micro-USD sum, exposed in USD by dividing the integer once per scrape (exact). */
class MicrosByModel {
  private readonly sums = new Map<string, { model: string; provider: string; micros: Micros }>();

  add(model: string, provider: string, micros: Micros): void {
    const key = `${model}\u0000${provider}`;
    const entry = this.sums.get(key);
    if (entry) entry.micros += micros;
    else this.sums.set(key, { model, provider, micros });
  }

  counter(registry: Registry, name: string, help: string): Counter<'model' | 'provider'> {
    const sums = this.sums;
    return new Counter({
      name, help, labelNames: ['model', 'provider'], registers: [registry],
      collect() {
        this.reset();
        for (const s of sums.values()) this.inc({ model: s.model, provider: s.provider }, s.micros / 1e6);
      },
    });
  }
}

/**
 * The gateway's Prometheus metrics, in a registry of their own (no process-global
 * state: two gateways in one process keep separate counts). Label values are bounded
 * by construction: route patterns, model and provider ids from the catalog, HTTP
 * statuses, error codes from src/lib/errors.ts, token types.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests;
  private readonly duration;
  private readonly upstream;
  private readonly overhead;
  private readonly ttft;
  private readonly tokens;
  private readonly costs = new MicrosByModel();
  private readonly byokCosts = new MicrosByModel();
  private readonly upstreamErrors;
  private readonly fallbacks;
  private readonly rejections;
  private readonly limitsDegraded;
  private readonly guardrailVerdicts;
  private readonly reservations;
  private reservedMicros: Micros = 0;
  /** The response cache's counters (cache-metrics.ts). */
  readonly cache: CacheMetrics;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.cache = new CacheMetrics(this.registry);
    this.requests = new Counter({ name: 'tollgate_requests_total', help: 'Requests answered (one per request-log row), by route pattern, model, provider, HTTP status and error code.', labelNames: ['route', 'model', 'provider', 'status', 'code'], registers });
    new Gauge({ name: 'tollgate_requests_in_flight', help: 'HTTP requests received and not yet answered.', registers, collect() { this.set(sources.requestsInFlight()); } });
    this.duration = new Histogram({ name: 'tollgate_request_duration_seconds', help: 'Whole request time, arrival to the log row.', labelNames: ['route', 'model', 'provider'], buckets: DURATION_BUCKETS, registers });
    this.upstream = new Histogram({ name: 'tollgate_upstream_duration_seconds', help: 'Time with an upstream request open: from the first attempt to the end of the answering body (retries and fallbacks included).', labelNames: ['model', 'provider'], buckets: DURATION_BUCKETS, registers });
    this.overhead = new Histogram({ name: 'tollgate_overhead_duration_seconds', help: 'The gateway\'s own time: request duration minus upstream duration.', labelNames: ['route'], buckets: OVERHEAD_BUCKETS, registers });
    this.ttft = new Histogram({ name: 'tollgate_time_to_first_token_seconds', help: 'Streamed replies: arrival to the first token written to the client.', labelNames: ['model', 'provider'], buckets: TTFT_BUCKETS, registers });
    this.tokens = new Counter({ name: 'tollgate_tokens_total', help: 'Tokens billed, by type; cached_input is part of input and reasoning part of output.', labelNames: ['model', 'provider', 'type'], registers });
    this.costs.counter(this.registry, 'tollgate_cost_usd_total', 'USD of the requests\' costs as logged (their usage.cost_usd_total), BYOK requests included; summed in integer micro-USD.');
    this.byokCosts.counter(this.registry, 'tollgate_byok_cost_usd_total', 'The part of tollgate_cost_usd_total served with the org\'s own provider key (shown, not debited).');
    this.upstreamErrors = new Counter({ name: 'tollgate_upstream_errors_total', help: 'Failed upstream attempts by provider and code (the upstream HTTP status, timeout, connect_error), and replies that broke after a 2xx (broken_reply).', labelNames: ['provider', 'code'], registers });
    this.fallbacks = new Counter({ name: 'tollgate_fallbacks_total', help: 'Requests moved on to another provider\'s route after a failure.', labelNames: ['from_provider', 'to_provider'], registers });
    this.rejections = new Counter({ name: 'tollgate_ratelimit_rejections_total', help: 'Requests refused by a limit, by kind (rpm, tpm, concurrency, budget) and scope type (key, project).', labelNames: ['kind', 'scope'], registers });
    this.limitsDegraded = new Counter({ name: 'tollgate_limits_degraded_total', help: 'Limit checks decided without the limits store (Redis did not answer), by kind: rpm, tpm and concurrency were admitted unchecked (fail open), budget refused with 503 limits_unavailable (fail closed).', labelNames: ['kind'], registers });
    this.guardrailVerdicts = new Counter({ name: 'tollgate_guardrail_verdicts_total', help: 'Verdicts of the projects\' guardrails (docs/guardrails.md), by guardrail name and action (allow, mask, block, rewrite, error).', labelNames: ['guardrail', 'action'], registers });
    this.reservations = new Gauge({ name: 'tollgate_reservations_in_flight', help: 'Credit reservations held by requests in flight.', registers });
    const reserved = (): Micros => this.reservedMicros;
    new Gauge({ name: 'tollgate_reserved_usd', help: 'USD held by the reservations in flight.', registers, collect() { this.set(reserved() / 1e6); } });
    new Gauge({ name: 'tollgate_request_log_queue_depth', help: 'Request-log rows queued and not yet written.', registers, collect() { this.set(sources.requestLogDepth()); } });
  }

  requestFinished(r: FinishedRequest): void {
    this.requests.inc({ route: r.route, model: r.model, provider: r.provider, status: r.status, code: r.code });
    const mp = { model: r.model, provider: r.provider };
    this.duration.observe({ route: r.route, model: r.model, provider: r.provider }, r.durationS);
    this.overhead.observe({ route: r.route }, Math.max(r.durationS - r.upstreamS, 0));
    if (r.upstreamS > 0) this.upstream.observe(mp, r.upstreamS);
    if (r.ttftS !== undefined) this.ttft.observe(mp, r.ttftS);
    if (r.usage) {
      for (const [field, type] of TOKEN_TYPES) {
        const n = r.usage[field];
        if (n > 0) this.tokens.inc({ model: r.model, provider: r.provider, type }, n);
      }
    }
    if (r.costMicros !== 0) {
      this.costs.add(r.model, r.provider, r.costMicros);
      if (r.byok) this.byokCosts.add(r.model, r.provider, r.costMicros);
    }
  }

  upstreamError(provider: string, code: string): void {
    this.upstreamErrors.inc({ provider, code });
  }

  fallback(from: string, to: string): void {
    this.fallbacks.inc({ from_provider: from, to_provider: to });
  }

  rateLimitRejected(kind: LimitKind, scope: LimitScopeType): void {
    this.rejections.inc({ kind, scope });
  }

  guardrailVerdict(guardrail: string, action: string): void {
    this.guardrailVerdicts.inc({ guardrail, action });
  }

  limitDegraded(kind: LimitKind): void {
    this.limitsDegraded.inc({ kind });
  }

  creditReserved(micros: Micros): void {
    this.reservations.inc();
    this.reservedMicros += micros;
  }

  creditSettled(micros: Micros): void {
    this.reservations.dec();
    this.reservedMicros -= micros;
  }

  /** The routing metrics (deployments, cooldowns, reloads) on this registry. */
  routing(source: DeploymentSource): RoutingMetrics {
    return new RoutingMetrics(this.registry, source);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
