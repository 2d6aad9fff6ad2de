import type { IncomingHttpHeaders } from 'node:http';
import { type Context, defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { OtlpConfig } from '../config/gateway-config.js';
import type { Exchange } from '../pipeline/exchange.js';
import type { ModelRoute } from '../providers/types.js';
import type { LogRow, UpstreamAttempt } from '../store/types.js';
import type { FailureKind } from '../pipeline/upstream.js';
import type { RequestTrace } from '../pipeline/events.js';
import { attemptEndAttributes, attemptSpanName, attemptStartAttributes, promptAllowed, requestAttributes, requestSpanName } from './genai.js';

/** Spans are sent at most this long after they end (the batch processor's schedule). */
const EXPORT_DELAY_MS = 1000;

/**
 * OpenTelemetry traces, exported as OTLP/HTTP JSON to `<endpoint>/v1/traces`. This
 * module is imported only when `telemetry.otlp` is configured, so a gateway without it
 * never loads the SDK. Nothing is registered globally: the provider, tracer and
 * propagator belong to this gateway.
 */
export class Tracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(private readonly config: OtlpConfig, version: string) {
    const exporter = new OTLPTraceExporter({ url: `${config.endpoint}/v1/traces`, headers: config.headers });
    this.provider = new BasicTracerProvider({
      resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: version })),
      // A caller's traceparent decides for its trace; a trace started here is kept with probability sampleRatio.
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
      spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS, maxQueueSize: 8192, maxExportBatchSize: 512 })],
    });
    this.tracer = this.provider.getTracer('tollgate', version);
  }

  /** The request's span, continuing the caller's trace when it sent a W3C `traceparent`. */
  startRequest(method: string, headers: IncomingHttpHeaders): RequestTrace {
    const parent = headers.traceparent === undefined ? ROOT_CONTEXT : this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const span = this.tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: method } }, parent);
    return new SpanTrace(this, span, trace.setSpan(parent, span), method);
  }

  /** @internal */
  startAttempt(name: string, attributes: Record<string, string | number | boolean> | undefined, parent: Context): { span: Span; headers: Record<string, string> } {
    const span = this.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(parent, span), headers, defaultTextMapSetter);
    return { span, headers };
  }

  mayIncludePrompt(ex: Exchange): boolean {
    return promptAllowed(this.config.includePrompts, ex.org);
  }

  /** Exports what is buffered and stops. */
  async close(): Promise<void> {
    await this.provider.shutdown();
  }
}

/** One request's spans: the request span and, one at a time, the span of the upstream attempt in progress. */
class SpanTrace implements RequestTrace {
  private attempt: Span | undefined;
  /** False for a trace the sampler left out: its spans are only propagated, so no attributes are built. */
  private readonly recording: boolean;

  constructor(private readonly tracing: Tracing, private readonly span: Span, private readonly context: Context, private readonly method: string) {
    this.recording = span.isRecording();
  }

  attemptStart(ex: Exchange, route: ModelRoute): Record<string, string> {
    this.attempt?.end();
    const attributes = this.recording ? attemptStartAttributes(ex, route) : undefined;
    const { span, headers } = this.tracing.startAttempt(attemptSpanName(ex, route), attributes, this.context);
    this.attempt = span;
    return headers;
  }

  attemptEnd(attempt: UpstreamAttempt | undefined, failure: FailureKind | undefined): void {
    const span = this.attempt;
    if (!span) return;
    this.attempt = undefined;
    if (this.recording) span.setAttributes(attemptEndAttributes(attempt, failure));
    if (failure) span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
    span.end();
  }

  end(ex: Exchange, row: LogRow, route: string, resolved: boolean): void {
    this.attemptEnd(undefined, undefined);
    if (!this.recording) {
      this.span.end();
      return;
    }
    this.span.updateName(requestSpanName(ex, this.method, route, resolved));
    this.span.setAttributes(requestAttributes(ex, row, route, this.tracing.mayIncludePrompt(ex)));
    if (row.status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR, message: row.errorCode ?? String(row.status) });
    this.span.end();
  }
}
