import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Authenticator } from './auth.js';
import { extractKey } from './auth.js';
import type { GatewayConfig } from './config/gateway-config.js';
import { GatewayError } from './errors.js';
import { elapsedMs, newExchange, type Exchange } from './exchange.js';
import type { HookRegistry } from './hooks.js';
import { IdPool } from './ids.js';
import { drainRefusedBody } from './drain.js';
import { boundedAttempts, clipText, MAX_LOGGED_MODEL_CHARS, MAX_LOGGED_PROMPT_CHARS } from './log-bounds.js';
import { requestLogValue } from './log-redact.js';
import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from './json-depth.js';
import { runModelRequest, type PipelineServices } from './pipeline.js';
import type { BodyParser, ErrorFormatter, ModelRequest, ModelRouteDef, PlainRouteDef } from './plugin.js';
import type { RequestLogWriter } from './request-log.js';
import type { LogRow } from './store/types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The gateway's per-request state (see Exchange). */
    exchange: Exchange;
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
  /** The exchanges in flight (the drain cuts them at its deadline). */
  inFlight?: Set<Exchange>;
  /**
   * Model requests whose row is not queued yet. A handler may outlive its connection (a
   * client that left while it settles): the shutdown waits for these before the last flush.
   */
  unlogged?: Set<Exchange>;
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
    const ex = request.exchange;
    deps.inFlight?.add(ex);
    reply.raw.on('close', () => {
      deps.inFlight?.delete(ex);
      if (!reply.raw.writableFinished) ex.abort.abort();
    });
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
    const ex = request.exchange;
    // A model request still running (a write error ends the response early) is logged when its bill is settled.
    if (!ex || ex.logged || !ex.billed || request.routeOptions.config.modality === undefined && reply.statusCode !== 404 && reply.statusCode !== 405) return;
    logExchange(deps, ex, reply.statusCode);
    await deps.hooks.run('post-billing', ex);
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

/** Queues the request-log row of an exchange, once, and tells the telemetry the same facts. */
function logExchange(deps: ServerDeps, ex: Exchange, status: number): void {
  ex.logged = true;
  deps.unlogged?.delete(ex);
  // What the client chose is kept within bounds (log-bounds.ts): a refused request costs nothing, its row must not cost much.
  const prompt = ex.org?.retention === 'none' ? undefined : ex.prompt;
  const promptCut = prompt !== undefined && prompt.length > MAX_LOGGED_PROMPT_CHARS;
  const row: LogRow = {
    requestId: ex.id, orgId: ex.org?.id ?? null, projectId: ex.apiKey?.projectId ?? null, apiKeyId: ex.apiKey?.id ?? null, modality: ex.modality,
    requestedModel: ex.requestedModel === undefined ? null : clipText(ex.requestedModel, MAX_LOGGED_MODEL_CHARS), usedModel: ex.route?.model.upstreamId ?? null,
    usedProvider: ex.route?.provider.id ?? null, status, errorCode: ex.errorCode ?? null,
    costMicros: ex.costMicros, costEstimated: ex.costEstimated, byok: ex.byok, durationMs: elapsedMs(ex),
    promptTokens: ex.usage?.input ?? null, completionTokens: ex.usage?.output ?? null,
    // An org whose retention is `none` keeps no copy of what it sent: no prompt text in its log.
    ttfbMs: ex.ttfbMs ?? null, prompt: prompt === undefined ? null : clipText(prompt, MAX_LOGGED_PROMPT_CHARS), attempts: boundedAttempts(ex.attempts), createdAt: ex.startedAt,
    extra: promptCut ? { ...ex.extra, prompt_chars: prompt.length } : ex.extra ?? null,
    guardrails: ex.guardrails && ex.guardrails.length > 0 ? ex.guardrails : null,
  };
  // Logged bodies (the project's body_logging) go to their own table with the row's batch; an org whose retention is `none` keeps none.
  if (ex.bodies && ex.org && ex.org.retention !== 'none') row.bodies = ex.bodies.stored(ex.id, ex.org.id, ex.startedAt);
  deps.log.enqueue(row);
  deps.telemetry?.onRequestEnd(ex, row);
}

export function addModelRoute<P extends ModelRequest>(app: FastifyInstance, deps: ServerDeps, def: ModelRouteDef<P>): void {
  app.route({
    method: def.method,
    url: def.url,
    bodyLimit: def.bodyLimit,
    config: { modality: def.handler.modality, auth: true, keyHeaders: def.keyHeaders, keyQuery: def.keyQuery, formatError: def.formatError },
    handler: async (request, reply) => {
      const ex = request.exchange;
      deps.unlogged?.add(ex);
      // Every charge has exactly one log row, whatever the client does. fastify's onResponse
      // runs only when a response finishes; a client that hangs up while the reply is being
      // written (a stream, or a JSON body still in the socket) never gets there. So the row
      // is also written when the response closes — but never before the bill is settled.
      ex.billed = false;
      const logClosed = (): void => {
        if (!ex.billed || ex.logged) return;
        logExchange(deps, ex, reply.raw.headersSent ? reply.statusCode : 499);
        void deps.hooks.run('post-billing', ex)?.catch((err: unknown) => request.log.error({ err }, 'post-billing hook failed'));
      };
      // A reply that finished is logged by onResponse (fastify runs it on 'finish', before 'close').
      reply.raw.once('close', logClosed);
      try {
        await runModelRequest(deps, def.handler, request, reply);
      } catch (err) {
        if (clientGone(reply)) ex.errorCode = err instanceof GatewayError ? err.code : 'internal_error';
        throw err;
      } finally {
        ex.billed = true;
        // A response that ended before the handler did (a small reply flushed at once, whose
        // onResponse came before the bill was settled), or a client that hung up meanwhile
        // (mid-stream, or before the upstream answered).
        if (reply.raw.writableFinished || clientGone(reply)) logClosed();
      }
      return reply;
    },
  });
}

function clientGone(reply: FastifyReply): boolean {
  return reply.raw.destroyed && !reply.raw.writableFinished;
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
