import type { Micros } from '../lib/money.js';
import type { UpstreamBody } from '../pipeline/upstream-body.js';
import type { FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { Exchange } from '../pipeline/exchange.js';
import type { LimitKind } from '../model/limits.js';
import { packageVersion } from '../lib/paths.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { ModelRoute } from '../providers/types.js';
import type { LogRow, UpstreamAttempt } from '../store/types.js';
import type { FailureKind } from '../pipeline/upstream.js';
import type { ExchangeObserver, ExchangeTelemetry, LimitScopeType } from '../pipeline/events.js';
import { codeLabel, NO_PROVIDER, UNKNOWN_MODEL } from './labels.js';
import type { GatewayMetrics, MetricSources } from './metrics.js';
import type { DeploymentSource, RoutingMetrics } from './routing-metrics.js';
import { MetricsServer } from './metrics-server.js';
import type { Tracing } from './tracing.js';

export type { ExchangeObserver, LimitScopeType } from '../pipeline/events.js';

const hr = (): bigint => process.hrtime.bigint();

/**
 * Metrics and traces, listening to the pipeline's events. Built only when gateway.yaml
 * asks for one of them (`metrics`, `telemetry.otlp`); each loads its libraries then
 * (prom-client, the OpenTelemetry SDK), so a gateway without them pays nothing.
 */
export class Telemetry implements ExchangeObserver {
  private metricsServer: MetricsServer | undefined;
  /** Deployments, cooldowns and reloads (routing-metrics.ts), once `routingMetrics` was called. */
  private routing: RoutingMetrics | undefined;
  private metricsUrl: string | undefined;

  private constructor(
    private readonly metrics: GatewayMetrics | undefined,
    private readonly tracing: Tracing | undefined,
    private readonly catalog: ProviderCatalog,
    private readonly metricsHost: string,
  ) {}

  /** Undefined when neither metrics nor traces are configured. */
  static async create(config: GatewayConfig, catalog: ProviderCatalog, sources: MetricSources): Promise<Telemetry | undefined> {
    if (!config.metrics && !config.telemetry.otlp) return undefined;
    const metrics = config.metrics ? new (await import('./metrics.js')).GatewayMetrics(sources) : undefined;
    const tracing = config.telemetry.otlp ? new (await import('./tracing.js')).Tracing(config.telemetry.otlp, packageVersion()) : undefined;
    return new Telemetry(metrics, tracing, catalog, config.metrics?.host ?? '127.0.0.1');
  }

  /** The routing metrics on this registry (undefined when metrics are off); made once. */
  routingMetrics(source: DeploymentSource): RoutingMetrics | undefined {
    if (!this.metrics) return undefined;
    this.routing ??= this.metrics.routing(source);
    return this.routing;
  }

  /** Starts the Prometheus listener, when metrics are on; returns its URL. */
  async listen(port: number): Promise<string | undefined> {
    if (!this.metrics) return undefined;
    this.metricsServer ??= new MetricsServer(this.metrics, this.metricsHost);
    this.metricsUrl ??= await this.metricsServer.listen(port);
    return this.metricsUrl;
  }

  /** `http://host:port/metrics` once listening. */
  get url(): string | undefined {
    return this.metricsUrl;
  }

  /** Stops the metrics listener and exports the spans still buffered. */
  async close(): Promise<void> {
    await this.metricsServer?.close();
    await this.tracing?.close();
  }

  onRequestStart(ex: Exchange, request: FastifyRequest): void {
    const route = request.routeOptions.url ?? 'unmatched';
    const state: ExchangeTelemetry = {
      route, upstreamStartHr: undefined, upstreamEndHr: undefined, bodyOpen: false,
      trace: this.tracing?.startRequest(request.method, request.headers),
    };
    ex.telemetry = state;
  }

  onCreditReserved(ex: Exchange): void {
    this.metrics?.creditReserved(ex.reservedMicros);
  }

  onCreditSettled(ex: Exchange): void {
    this.metrics?.creditSettled(ex.reservedMicros);
  }

  onAttemptStart(ex: Exchange, route: ModelRoute): Record<string, string> | undefined {
    const t = ex.telemetry;
    if (!t) return undefined;
    t.upstreamStartHr ??= hr();
    const previous = ex.attempts.at(-1);
    if (previous && previous.provider !== route.provider.id) this.metrics?.fallback(previous.provider, route.provider.id);
    return t.trace?.attemptStart(ex, route);
  }

  onAttemptEnd(ex: Exchange, failure: FailureKind | undefined, body: UpstreamBody | undefined): void {
    const t = ex.telemetry;
    if (!t) return;
    const attempt = ex.attempts.at(-1);
    if (failure && failure !== 'aborted' && attempt) this.metrics?.upstreamError(attempt.provider, attempt.status === null ? failure : String(attempt.status));
    if (failure || !body) {
      this.upstreamEnded(t, attempt, failure);
      return;
    }
    t.bodyOpen = true;
    body.onClose(() => {
      if (t.bodyOpen) this.upstreamEnded(t, attempt, undefined);
    });
  }

  private upstreamEnded(t: ExchangeTelemetry, attempt: UpstreamAttempt | undefined, failure: FailureKind | undefined): void {
    t.bodyOpen = false;
    t.upstreamEndHr = hr();
    t.trace?.attemptEnd(attempt, failure);
  }

  onRequestEnd(ex: Exchange, row: LogRow): void {
    const t = ex.telemetry;
    if (!t) return;
    // A body nobody read to its end (the client left) ends the upstream part here.
    if (t.bodyOpen) this.upstreamEnded(t, ex.attempts.at(-1), undefined);
    const model = this.modelLabel(ex);
    const provider = ex.route?.provider.id ?? NO_PROVIDER;
    const last = row.attempts.at(-1);
    if (row.errorCode === 'upstream_error' && last?.status != null && last.status < 300) this.metrics?.upstreamError(last.provider, 'broken_reply');
    this.metrics?.requestFinished({
      route: t.route, model, provider, status: String(row.status), code: codeLabel(row.errorCode),
      durationS: row.durationMs / 1000,
      upstreamS: t.upstreamStartHr !== undefined && t.upstreamEndHr !== undefined ? Number(t.upstreamEndHr - t.upstreamStartHr) / 1e9 : 0,
      ttftS: ex.streamed && row.ttfbMs !== null ? row.ttfbMs / 1000 : undefined,
      usage: ex.usage, costMicros: row.costMicros, byok: row.byok,
    });
    if (row.deployment && row.usedProvider) this.routing?.requestServed(row.usedProvider, row.deployment, row.status);
    t.trace?.end(ex, row, t.route, model !== UNKNOWN_MODEL);
  }

  onRateLimitRejected(kind: LimitKind, scope: LimitScopeType): void {
    this.metrics?.rateLimitRejected(kind, scope);
  }

  /** A guardrail's verdict: `tollgate_guardrail_verdicts_total` (the guardrail's name is the project's to choose: cut to 64 characters). */
  onGuardrailVerdict(guardrail: string, action: string): void {
    this.metrics?.guardrailVerdict(guardrail.slice(0, 64), action);
  }

  /** A limit of this kind was decided without the limits store (the engine's `onDegraded`): `tollgate_limits_degraded_total`. */
  onLimitDegraded(kind: LimitKind): void {
    this.metrics?.limitDegraded(kind);
  }

  /** A request the response cache was on for: `tollgate_cache_requests_total`, `tollgate_cache_saved_usd_total`. */
  onCacheResult(result: string, savedMicros: Micros): void {
    this.metrics?.cache.result(result, savedMicros);
  }

  /** The response cache's store failed; the request went on without it: `tollgate_cache_degraded_total`. */
  onCacheDegraded(): void {
    this.metrics?.cache.storeFailed();
  }

  /** The catalog id of the model: a string a client made up never becomes a label value. */
  private modelLabel(ex: Exchange): string {
    if (ex.route) return ex.route.model.id;
    if (ex.requestedModel === undefined) return UNKNOWN_MODEL;
    return this.catalog.routesFor(ex.requestedModel).find((r) => r.model.modality === ex.modality)?.model.id ?? UNKNOWN_MODEL;
  }
}
