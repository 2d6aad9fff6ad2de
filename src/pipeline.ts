import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from './errors.js';
import { elapsedMs, serverCut, type Exchange } from './exchange.js';
import type { HookRegistry } from './hooks.js';
import { admitLimits, type Admission } from './limits/admission.js';
import type { Limiter } from './limits/types.js';
import { formatUsd, picosToMicros, picosToMicrosCeil } from './money.js';
import type { Metered, ModalityHandler, ModelRequest, RespondContext } from './plugin.js';
import { bindEndpoint, type ProviderCatalog } from './providers/catalog.js';
import type { ModelRoute } from './providers/types.js';
import type { ProviderKeyCache } from './provider-keys.js';
import type { Store } from './store/types.js';
import type { BudgetAlerts } from './alerts/budget-alerts.js';
import { StreamedReply } from './streamed-reply.js';
import type { ExchangeObserver } from './telemetry/events.js';
import { awaitFirstByte, statusKind, UpstreamFailure, upstreamError, type UpstreamClient, type UpstreamRequest, type UpstreamResponse } from './upstream.js';

export interface PipelineServices {
  catalog: ProviderCatalog;
  store: Store;
  providerKeys: ProviderKeyCache;
  hooks: HookRegistry;
  upstream: UpstreamClient;
  now: () => number;
  /** Metrics and traces; undefined when both are off. */
  telemetry: ExchangeObserver | undefined;
  /** Limits and budgets per key and project (docs/limits.md); undefined: none are applied. */
  limiter?: Limiter | undefined;
  /** Budget threshold alerts (src/alerts/); undefined: none. */
  alerts?: BudgetAlerts | undefined;
  /** server.stream_stall_timeout_ms: a streamed reply the client takes nothing of for this long is cut. */
  streamStallMs: number;
}

/** A route chosen for this request, with the key the gateway will send upstream. */
interface PlannedRoute {
  route: ModelRoute;
  apiKey: string | undefined;
  byok: boolean;
}

/**
 * The model-request pipeline after auth: validate (pre-upstream), resolve the model,
 * admit it against its key's and project's limits (src/limits/admission.ts), reserve
 * credit, call upstream with the route's retry and fallback policy (upstream), let the
 * plugin reply (post-upstream), settle the bill and the limits (billing). Every failure
 * settles the reservation to zero and releases the limits before it reaches the client.
 */
export async function runModelRequest<P extends ModelRequest>(
  svc: PipelineServices, handler: ModalityHandler<P>, request: FastifyRequest, reply: FastifyReply,
): Promise<void> {
  const ex = request.exchange;
  let limits: Admission | undefined;
  // What the request owes once the plugin has replied: a failure after that point (the settle
  // itself) must still charge it, not release the reservation at $0.
  let owed = 0;
  try {
    const parsed = await handler.parse(request.body, request);
    request.jsonText = undefined; // read by the parse only: not held while the request runs
    ex.requestedModel = parsed.model;
    ex.prompt = parsed.prompt;
    const costBound = costBounds(handler, parsed);
    let routes: ModelRoute[];
    try {
      routes = allowedRoutes(ex, resolveRoutes(svc, parsed.model, handler, svc.now())).map((r) => withEndpoint(handler, parsed, r));
      for (const r of routes) handler.checkRoute?.(parsed, r);
    } catch (err) {
      // A request the router refuses still counts against its key's limits, and a key over
      // them is told so (429), not why its request could not be routed: no route, no bounds.
      limits = await admitLimits(svc, ex, reply, handler, parsed, [], costBound);
      throw err;
    }
    limits = await admitLimits(svc, ex, reply, handler, parsed, routes, costBound);
    const plan = await reserveCredit(svc, ex, await planRoutes(svc.providerKeys, ex, routes), costBound);
    const openStream = (headers: Record<string, string>): StreamedReply => new StreamedReply(ex, reply, svc.streamStallMs).start(headers);
    const early = await svc.hooks.run('pre-upstream', ex, parsed, { texts: () => handler.texts?.(parsed) ?? [], body: () => request.body });
    let metered: Metered;
    if (early) {
      // A hook answered (src/hooks.ts ShortCircuit): no upstream call, charged what it says.
      const first = plan[0];
      if (!first) throw new GatewayError('model_not_found', [parsed.model]);
      ex.route = first.route;
      ex.byok = first.byok;
      metered = await early.respond({ ex, parsed, route: first.route, request, reply, openStream });
    } else {
      const { response, planned } = await callUpstream(svc, handler, parsed, plan, ex);
      ex.byok = planned.byok;
      await svc.hooks.run('upstream', ex, parsed);
      await svc.hooks.run('post-upstream', ex, parsed);
      const answer = { ex, parsed, route: planned.route, request, reply };
      metered = response ? await handler.respond({ ...answer, upstream: response, openStream }) : await respondLocally(handler, answer);
    }
    ex.costMicros = picosToMicros(metered.costPicos);
    ex.costEstimated = metered.estimated ?? false;
    owed = ex.costMicros;
    await settle(svc, ex, owed);
    await limits?.settle(ex);
    await svc.hooks.run('billing', ex, parsed);
  } catch (err) {
    // A reply refused after the upstream answered (a post-upstream guardrail) costs what the upstream charged.
    if (owed === 0 && err instanceof GatewayError && err.extras.chargedPicos !== undefined) {
      ex.costMicros = picosToMicros(err.extras.chargedPicos);
      owed = ex.costMicros;
    }
    // Unsettled (a failure before the reply, or a settle that threw): settled now, once.
    await settle(svc, ex, owed);
    if (owed > 0) await limits?.settle(ex);
    else await limits?.release();
    if (err instanceof GatewayError) err.withContext({ requestedModel: ex.requestedModel, usedProvider: ex.route?.provider.id });
    if (!reply.sent) throw err;
    request.log.error({ err, code: err instanceof GatewayError ? err.code : 'internal_error' }, 'model request failed after the reply started');
  }
}

/**
 * Charges `cost` against the reservation (BYOK requests are never debited) exactly once.
 * The exchange is marked settled only after the store has charged: a store call that
 * throws leaves it unsettled, so the caller's next settle (the pipeline's catch, with the
 * same cost) charges it then. A repeated call cannot charge twice: the store's settle
 * claims the reservation, and once it has, `ex.settled` stops any further call.
 */
export async function settle(svc: Pick<PipelineServices, 'store' | 'telemetry'>, ex: Exchange, cost: number): Promise<void> {
  if (ex.settled) return;
  if (ex.reservedMicros > 0) {
    const charged = await svc.store.settle(ex.id, ex.byok ? 0 : cost);
    svc.telemetry?.onCreditSettled(ex);
    if (!ex.byok && charged < cost) {
      // The reservation bound was exceeded: the balance never goes below zero, and the
      // log row records what was charged so the ledger always equals the logged costs.
      ex.extra = { ...ex.extra, uncharged_micros: cost - charged };
      ex.costMicros = charged;
    }
  }
  ex.settled = true;
}

function resolveRoutes<P extends ModelRequest>(svc: PipelineServices, model: string, handler: ModalityHandler<P>, now: number): ModelRoute[] {
  const all = svc.catalog.routesForModality(model, handler.modality);
  if (all.length === 0) throw handler.unknownModel?.(model) ?? new GatewayError('model_not_found', [model], { param: 'model' });
  const active = all.filter((r) => !r.model.deactivatedAt || Date.parse(r.model.deactivatedAt) > now);
  if (active.length === 0) {
    throw new GatewayError('model_deactivated', [model, all[0]?.model.deactivatedAt ?? ''], { param: 'model' });
  }
  return active;
}

/** Each route's cost bound (picoUSD), computed once per request: the limits' budget check and the credit reservation both use it. */
function costBounds<P extends ModelRequest>(handler: ModalityHandler<P>, parsed: P): (route: ModelRoute) => bigint {
  const known = new Map<ModelRoute, bigint>();
  return (route) => {
    let bound = known.get(route);
    if (bound === undefined) known.set(route, (bound = handler.maxCostPicos(parsed, route)));
    return bound;
  };
}

/** The route with the endpoint the handler picks for this request, when it is not the modality's own. */
function withEndpoint<P extends ModelRequest>(handler: ModalityHandler<P>, parsed: P, route: ModelRoute): ModelRoute {
  const endpoint = handler.endpoint?.(parsed, route);
  return endpoint && endpoint !== route.endpoint ? { ...route, endpoint: bindEndpoint(endpoint, route.model) } : route;
}

/** A key with a model allow-list may use only the routes of the models it names (a `provider/model` pin or an alias counts as its model). */
function allowedRoutes(ex: Exchange, routes: ModelRoute[]): ModelRoute[] {
  const allowed = ex.apiKey?.allowedModels;
  if (!allowed) return routes;
  const ok = routes.filter((r) => allowed.includes(r.model.id));
  if (ok.length === 0) throw new GatewayError('model_not_allowed', [ex.requestedModel ?? '', ex.apiKey?.prefix ?? '', allowed.join(', ')], { param: 'model' });
  return ok;
}

async function planRoutes(providerKeys: ProviderKeyCache, ex: Exchange, routes: ModelRoute[]): Promise<PlannedRoute[]> {
  const own = ex.org ? await providerKeys.keysOf(ex.org.id) : new Map<string, string>();
  return routes.map((route) => {
    const orgKey = own.get(route.provider.id);
    return { route, apiKey: orgKey ?? route.provider.apiKey, byok: orgKey !== undefined };
  });
}

/**
 * Holds the most the request can cost on any route it may use. When the balance
 * cannot cover it, the request may still go through the routes where the org's own
 * provider key is used (spec §5); otherwise it is refused with 402.
 */
async function reserveCredit(
  svc: PipelineServices, ex: Exchange, plan: PlannedRoute[], costBound: (route: ModelRoute) => bigint,
): Promise<PlannedRoute[]> {
  const org = ex.org;
  if (!org) throw new GatewayError('missing_api_key');
  const paid = plan.filter((p) => !p.byok);
  if (paid.length === 0) return plan;
  let max = 0n;
  for (const p of paid) {
    const c = costBound(p.route);
    if (c > max) max = c;
  }
  const amount = Math.max(picosToMicrosCeil(max), 0);
  if (amount === 0 || (await svc.store.reserve(org.id, ex.id, amount))) {
    ex.reservedMicros = amount;
    if (amount > 0) svc.telemetry?.onCreditReserved(ex);
    return plan;
  }
  const own = plan.filter((p) => p.byok);
  if (own.length > 0) return own;
  const balance = (await svc.store.getOrg(org.id))?.balanceMicros ?? 0;
  throw new GatewayError('insufficient_credits', [formatUsd(amount), formatUsd(balance)]);
}

function respondLocally<P extends ModelRequest>(handler: ModalityHandler<P>, ctx: Omit<RespondContext<P>, 'upstream' | 'openStream'>): Promise<Metered> {
  if (!handler.respondLocally) throw new Error(`the ${handler.modality} handler serves a route locally but has no respondLocally`);
  return handler.respondLocally(ctx);
}

/** The upstream's response on the first route that answered, or none when that route is served locally (`servedLocally`). */
async function callUpstream<P extends ModelRequest>(
  svc: PipelineServices, handler: ModalityHandler<P>, parsed: P, plan: PlannedRoute[], ex: Exchange,
): Promise<{ response: UpstreamResponse | undefined; planned: PlannedRoute }> {
  let last: { failure: UpstreamFailure; planned: PlannedRoute } | undefined;
  for (const planned of plan) {
    const { route } = planned;
    ex.route = route;
    if (last && !(last.planned.route.endpoint.fallback && isFallbackable(last.failure))) break;
    if (handler.servedLocally?.(parsed, route)) return { response: undefined, planned };
    const timeout = handler.timeoutMs?.(route) ?? route.endpoint.timeoutMs;
    let reusable: UpstreamRequest | undefined;
    for (let attempt = 1; attempt <= route.endpoint.retry.attempts; attempt++) {
      const started = elapsedMs(ex);
      const record = (status: number | null, error: string | null): void => {
        ex.attempts.push({ provider: route.provider.id, model: route.model.upstreamId, status, error, durationMs: Math.round(elapsedMs(ex) - started) });
      };
      try {
        // A body in memory is built once per route; a Readable one (an upload) is built anew for each attempt.
        const built = reusable ?? await handler.buildUpstream(parsed, route);
        if (!(built.body instanceof Readable)) reusable = built;
        const traceHeaders = svc.telemetry?.onAttemptStart(ex, route);
        // A stream that sends nothing for first_byte_timeout_ms (headers included) has stalled: nothing reached the client yet.
        const firstByte = built.stream ? route.endpoint.firstByteTimeoutMs : undefined;
        const response = await svc.upstream.send(route, built, planned.apiKey, ex.abort.signal, { timeoutMs: timeout, firstByteMs: firstByte, traceHeaders });
        const byStatus = statusKind(response.statusCode);
        const kind = byStatus && (route.provider.errorKind?.(response.headers) ?? byStatus);
        if (!kind) {
          if (firstByte !== undefined) await awaitFirstByte(response, Math.max(1, firstByte - (elapsedMs(ex) - started)), ex.abort.signal, firstByte);
          record(response.statusCode, null);
          svc.telemetry?.onAttemptEnd(ex, undefined, response.body);
          return { response, planned };
        }
        const failure = new UpstreamFailure(kind, `status ${response.statusCode}`, response.statusCode, await readCapped(response, 64 * 1024));
        record(response.statusCode, failure.providerMessage || kind);
        throw failure;
      } catch (err) {
        if (!(err instanceof UpstreamFailure)) throw err;
        if (err.status === null) record(null, err.message);
        svc.telemetry?.onAttemptEnd(ex, err.kind, undefined);
        last = { failure: err, planned };
        if (err.kind === 'aborted' || attempt === route.endpoint.retry.attempts || !isRetryable(err, route)) break;
        await sleep(route.endpoint.retry.backoffMs * attempt);
      }
    }
  }
  if (!last) throw new GatewayError('model_not_found', [parsed.model]);
  ex.route = last.planned.route;
  const timeout = handler.timeoutMs?.(last.planned.route) ?? last.planned.route.endpoint.timeoutMs;
  const message = last.failure.providerMessage;
  if (last.failure.kind === '4xx' && (await keyRejected(last.planned.route, last.failure))) {
    throw new GatewayError('upstream_unauthorized', [message]);
  }
  const mapped = await mappedError(last.planned.route, last.failure);
  if (mapped) throw mapped;
  // Cut at the drain deadline while waiting for the upstream: the client is told so, not that it left.
  if (last.failure.kind === 'aborted') throw serverCut(ex) ?? upstreamError(last.failure, message, timeout);
  throw upstreamError(last.failure, message, timeout);
}

/** Providers that refuse a bad key with a plain 400 (Gemini) say so in YAML: `auth.rejected_when`. */
async function keyRejected(route: ModelRoute, failure: UpstreamFailure): Promise<boolean> {
  if (!route.provider.keyRejected || failure.json === undefined) return false;
  try {
    return await route.provider.keyRejected(failure.json);
  } catch {
    return false;
  }
}

/** The provider file's `errors` rules (e.g. Azure's 400 content_filter → content_blocked): the first that matches the error body decides. */
async function mappedError(route: ModelRoute, failure: UpstreamFailure): Promise<GatewayError | undefined> {
  const rules = route.provider.errorRules;
  if (!rules || failure.json === undefined) return undefined;
  for (const rule of rules) {
    if (rule.status !== undefined && rule.status !== failure.status) continue;
    if (await rule.when(failure.json)) return new GatewayError(rule.code, [failure.providerMessage || `upstream status ${failure.status}`]);
  }
  return undefined;
}

function isRetryable(f: UpstreamFailure, route: ModelRoute): boolean {
  return (route.endpoint.retry.on as readonly string[]).includes(f.kind);
}

/** Fallback to the next route only before any byte reached the client, and only for provider-side faults. */
function isFallbackable(f: UpstreamFailure): boolean {
  return f.kind === 'connect_error' || f.kind === '5xx' || f.kind === 'timeout';
}

async function readCapped(response: UpstreamResponse, cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      const buf = chunk as Buffer;
      if (size < cap) chunks.push(buf.subarray(0, cap - size));
      size += buf.length;
    }
  } catch {
    // A body that breaks while reading an error is still an error; what arrived is enough.
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
