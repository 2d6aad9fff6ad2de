import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Authenticator } from '../tenancy/auth.js';
import { extractKey } from '../tenancy/auth.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { GatewayError } from '../lib/errors.js';
import { newExchange, stampFirstByte, type Exchange } from '../pipeline/exchange.js';
import type { HookRegistry } from '../pipeline/hooks.js';
import { IdPool } from '../lib/ids.js';
import { drainRefusedBody } from './drain.js';
import { requestLogValue } from '../lib/log-redact.js';
import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../lib/json-depth.js';
import { runModelRequest, type PipelineServices } from '../pipeline/pipeline.js';
import type { BodyParser, ErrorFormatter, ModelRequest, ModelRouteDef, PlainRouteDef } from '../pipeline/plugin.js';
import type { RequestLogWriter } from '../pipeline/request-log.js';
import type { RequestLifecycle, RequestLifecycles } from '../pipeline/request-lifecycle.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The gateway's per-request state (see Exchange). */
    exchange: Exchange;
    /** The request's reserve → settle → log (src/pipeline/request-lifecycle.ts). */
    lifecycle: RequestLifecycle;
    /** The text of a JSON body as received (before parsing); undefined for other bodies. */
    jsonText: string | undefined;
  }
  interface FastifyContextConfig {
    modality?: string;
    auth?: boolean;
    keyHeaders?: readonly string[];
    /** Query parameters that may carry the key (the Gemini routes' `key`), after the headers. */
    keyQuery?: readonly string[];
    formatError?: ErrorFormatter;
  }
}

export interface ServerDeps extends PipelineServices {
  config: GatewayConfig;
  auth: Authenticator;
  log: RequestLogWriter;
  hooks: HookRegistry;
  /** Every request's lifecycle: what the drain cuts and what the shutdown waits for. */
  lifecycles: RequestLifecycles;
}

/**
 * The fastify app: request ids, auth on /v1, the error body, 404/405, body parsing
 * and the request log. Routes are added by plugins through `addModelRoute` /
 * `addPlainRoute`.
 */
export function createServer(deps: ServerDeps, logStream?: NodeJS.WritableStream): FastifyInstance {
  const ids = new IdPool();
  const app = Fastify({
    // fastify's request logger binds `reqId` (the `req_…` id) to every line about a request;
    // the closing line of a failed request carries its error code.
    logger: deps.config.log.level === 'silent' ? false : { level: deps.config.log.level, stream: logStream, serializers: { req: requestLogValue, res: replyLogValue } },
    bodyLimit: deps.config.server.bodyLimitBytes,
    trustProxy: deps.config.server.trustProxy,
    genReqId: () => ids.next('req'),
    requestIdHeader: false,
    // During the drain the gateway answers 503 itself (onRequest below), in the standard body with x-request-id.
    return503OnClosing: false,
    // The router's own errors (a bad %-escape, a path segment over 100 characters) in the standard body too.
    frameworkErrors: (err, request, reply) => {
      void reply.header('x-request-id', request.id);
      sendError(toGatewayError(err, request), request, reply);
    },
    // fastify's own JSON parser (secure-json-parse): a body setting __proto__ or constructor.prototype is refused (400).
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
  });
  app.decorateRequest('exchange', null as unknown as Exchange);
  app.decorateRequest('jsonText', undefined);
  app.decorateRequest('lifecycle', null as unknown as RequestLifecycle);
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // JSON is the only body type the core accepts (415 otherwise); plugins add theirs with bodyParser().
  app.removeContentTypeParser('text/plain');
  // fastify's own JSON parser, behind a nesting limit checked on the text (see json-depth.ts).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonNestedDeeperThan(body as string, MAX_JSON_DEPTH)) {
      done(new GatewayError('invalid_request', [`The request body nests JSON deeper than ${MAX_JSON_DEPTH} levels`]), undefined);
      return;
    }
    request.jsonText = body as string;
    parseJson(request, body as string, done);
  });
  app.addHook('onRequest', async (request, reply) => {
    const cfg = request.routeOptions.config;
    request.exchange = newExchange(request.id, cfg.modality ?? 'other', deps.now());
    deps.telemetry?.onRequestStart(request.exchange, request);
    void reply.header('x-request-id', request.id);
    request.lifecycle = deps.lifecycles.start(request.exchange, reply);
    if (closing) throw new GatewayError('service_unavailable');
    if (cfg.modality === undefined) return;
    await deps.hooks.run('pre-auth', request.exchange);
    if (cfg.auth === false) return;
    const { key, org, project } = await deps.auth.authenticate(extractKey(request.headers, cfg.keyHeaders, cfg.keyQuery && (request.query as Record<string, unknown>), cfg.keyQuery));
    request.exchange.apiKey = key;
    request.exchange.org = org;
    request.exchange.project = project;
    await deps.hooks.run('auth', request.exchange);
  });
  app.addHook('onResponse', async (request, reply) => {
    // A model request still running (a write error ends the response early) is logged when its bill is settled.
    if (!request.lifecycle || request.routeOptions.config.modality === undefined && reply.statusCode !== 404 && reply.statusCode !== 405) return;
    await request.lifecycle.log(reply.statusCode);
  });
  app.setErrorHandler((err: FastifyError | GatewayError, request, reply) => sendError(toGatewayError(err, request), request, reply));
  app.setNotFoundHandler((request, reply) => {
    const url = request.url.split('?')[0] ?? '/';
    const allowed = (['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const).filter((m) => app.hasRoute({ method: m, url }));
    if (allowed.length > 0) {
      void reply.header('allow', allowed.join(', '));
      sendError(new GatewayError('method_not_allowed', [request.method, url, allowed.join(', ')]), request, reply);
    } else {
      sendError(new GatewayError('route_not_found', [request.method, url]), request, reply);
    }
  });
  return app;
}

function replyLogValue(reply: { statusCode: number; request?: { exchange?: Exchange } }): { statusCode: number; code?: string } {
  const code = reply.request?.exchange?.errorCode;
  return code === undefined ? { statusCode: reply.statusCode } : { statusCode: reply.statusCode, code };
}

export function addModelRoute<P extends ModelRequest>(app: FastifyInstance, deps: ServerDeps, def: ModelRouteDef<P>): void {
  app.route({
    method: def.method,
    url: def.url,
    bodyLimit: def.bodyLimit,
    config: { modality: def.handler.modality, auth: true, keyHeaders: def.keyHeaders, keyQuery: def.keyQuery, formatError: def.formatError },
    // The time to first byte of a reply sent whole (a stream's is stamped at its first write).
    onSend: (request, reply, payload, done) => {
      if (reply.statusCode < 300 && !isStream(payload)) stampFirstByte(request.exchange);
      done(null, payload);
    },
    // Every charge has exactly one log row, whatever the client does (src/pipeline/request-lifecycle.ts).
    handler: async (request, reply) => {
      await request.lifecycle.charged(reply, () => runModelRequest(deps, def.handler, request, reply));
      return reply;
    },
  });
}

function isStream(payload: unknown): boolean {
  return typeof payload === 'object' && payload !== null && typeof (payload as { pipe?: unknown }).pipe === 'function';
}

export function addPlainRoute(app: FastifyInstance, def: PlainRouteDef): void {
  app.route({
    method: def.method,
    url: def.url,
    config: { modality: def.modality, auth: def.auth, keyHeaders: def.keyHeaders, keyQuery: def.keyQuery, formatError: def.formatError },
    handler: async (request, reply) => def.handler(request.exchange, request, reply),
  });
}

/** Errors after which the same request, sent again after `retry-after`, can succeed. */
const RETRYABLE: ReadonlySet<string> = new Set(['service_unavailable', 'rate_limit_exceeded', 'limits_unavailable']);

function sendError(err: GatewayError, request: FastifyRequest, reply: FastifyReply): void {
  if (request.exchange) request.exchange.errorCode = err.code;
  if (reply.sent || reply.raw.headersSent) return;
  if (err.code === 'body_too_large') drainRefusedBody(request.raw, reply);
  for (const [k, v] of Object.entries(err.extras.headers ?? {})) void reply.header(k, v);
  // The OpenAI SDKs retry 429/5xx by themselves; a gateway that already decided must say so.
  // Retrying helps only where waiting changes the answer: a drain, a rate window, a Redis blip.
  if (err.status >= 500 || err.status === 429) void reply.header('x-should-retry', RETRYABLE.has(err.code) ? 'true' : 'false');
  const format = request.routeOptions.config?.formatError;
  void reply.code(err.status).type('application/json').send(format ? format(err) : err.toBody());
}

/** Lets a plugin accept another body type; a parser failure reaches the client as its GatewayError. */
export function addBodyParser(app: FastifyInstance, contentType: string | RegExp, parser: BodyParser): void {
  app.addContentTypeParser(contentType, (request: FastifyRequest, payload: IncomingMessage) => parser(request, payload));
}

const FASTIFY_CODES: Record<string, (e: FastifyError, r: FastifyRequest) => GatewayError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_e, r) => new GatewayError('unsupported_media_type', [String(r.headers['content-type'] ?? '(none)')]),
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, r) => new GatewayError('body_too_large', [r.routeOptions.bodyLimit ?? 0]),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new GatewayError('invalid_json', ['the body is empty']),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new GatewayError('invalid_json', ['it is not well-formed JSON, or it sets __proto__ or constructor.prototype (refused)']),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new GatewayError('invalid_request', ['Content-Length does not match the body']),
  FST_ERR_BAD_URL: (_e, r) => new GatewayError('invalid_request', [`The path ${r.url.split('?')[0] ?? ''} has a bad percent-escape`]),
  FST_ERR_MAX_PARAM_LENGTH: () => new GatewayError('uri_too_long', [100]),
};

function toGatewayError(err: FastifyError | GatewayError, request: FastifyRequest): GatewayError {
  if (err instanceof GatewayError) return err;
  const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
  if (mapped) return mapped(err, request);
  if (err.statusCode === 400 && err.code === 'FST_ERR_VALIDATION') return new GatewayError('invalid_request', [err.message]);
  request.log.error({ err, code: 'internal_error' }, 'unexpected error');
  return new GatewayError('internal_error', [request.id]);
}
