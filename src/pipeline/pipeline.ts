import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../lib/errors.js';
import { stampFirstByte, type Exchange } from './exchange.js';
import type { HookRegistry } from './hooks.js';
import { admitLimits } from './admission.js';
import type { Limiter } from '../model/limits.js';
import { formatUsd, picosToMicrosCeil, type Micros } from '../lib/money.js';
import type { Metered, ModalityHandler, ModelRequest, RespondContext, StreamOptions } from './plugin.js';
import { bindEndpoint, type ProviderCatalog } from '../providers/catalog.js';
import type { ModelRoute } from '../providers/types.js';
import type { ProviderKeyCache } from '../tenancy/provider-keys.js';
import type { RequestLifecycle } from './request-lifecycle.js';
import type { Store } from '../store/types.js';
import type { BudgetAlerts } from '../alerts/budget-alerts.js';
import { StreamedReply } from './streamed-reply.js';
import type { ExchangeObserver } from './events.js';
import type { UpstreamClient } from './upstream.js';
import type { UpstreamBody } from './upstream-body.js';
import { callUpstream, type PlannedRoute } from './call-upstream.js';
import { groupRoutes } from '../routing/groups.js';
import type { Lease, Router } from '../routing/router.js';
import type { ModelGroup } from '../model/routing.js';

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
  /** Deployments, cooldowns, model groups (src/routing/); undefined: each provider's single key, no groups. */
  router?: Router | undefined;
}

/**
 * The model-request pipeline after auth: validate (pre-upstream), resolve the model,
 * admit it against its key's and project's limits (src/pipeline/admission.ts), reserve
 * credit, call upstream with the route's retry and fallback policy (upstream), let the
 * plugin reply (post-upstream) and record what it measured, settle the bill and the
 * limits (billing). The request's lifecycle (src/pipeline/request-lifecycle.ts) holds the
 * reservation: every failure settles it at what is owed (0 before a reply) and releases
 * the limits before it reaches the client.
 */
export async function runModelRequest<P extends ModelRequest>(
  svc: PipelineServices, handler: ModalityHandler<P>, request: FastifyRequest, reply: FastifyReply,
): Promise<void> {
  const ex = request.exchange;
  const life = request.lifecycle;
  // The deployment that answered, held until the request ends (least_busy counts it, its tpm is settled to what was used).
  let lease: Lease | undefined;
  let body: UpstreamBody | undefined;
  try {
    const parsed = await handler.parse(request.body, request);
    request.jsonText = undefined; // read by the parse only: not held while the request runs
    ex.requestedModel = parsed.model;
    ex.prompt = parsed.prompt;
    if (parsed.logExtra) ex.extra = { ...ex.extra, ...parsed.logExtra };
    const costBound = costBounds(handler, parsed);
    let routes: ModelRoute[];
    const group = svc.router?.settings.groups.get(parsed.model);
    try {
      routes = allowedRoutes(ex, resolveRoutes(svc, parsed.model, handler, svc.now(), group), group).map((r) => withEndpoint(handler, parsed, r));
      for (const r of routes) handler.checkRoute?.(parsed, r);
    } catch (err) {
      // A request the router refuses still counts against its key's limits, and a key over
      // them is told so (429), not why its request could not be routed: no route, no bounds.
      life.admitted(await admitLimits(svc, ex, reply, handler, parsed, [], costBound));
      throw err;
    }
    life.admitted(await admitLimits(svc, ex, reply, handler, parsed, routes, costBound));
    const plan = await reserveCredit(svc, life, await planRoutes(svc.providerKeys, ex, routes), costBound);
    const openStream = (headers: Record<string, string>, opts?: StreamOptions): StreamedReply => {
      if (opts?.tokens === true) ex.streamed = true;
      return new StreamedReply(ex, reply, svc.streamStallMs, () => stampFirstByte(ex)).start(headers);
    };
    const early = await svc.hooks.run('pre-upstream', ex, parsed, { texts: () => handler.texts?.(parsed) ?? [], body: () => request.body });
    let metered: Metered;
    if (early) {
      // A hook answered (src/pipeline/hooks.ts ShortCircuit): no upstream call, charged what it says.
      const first = plan[0];
      if (!first) throw new GatewayError('model_not_found', [parsed.model]);
      ex.route = first.route;
      ex.byok = first.byok;
      metered = await early.respond({ ex, parsed, route: first.route, request, reply, meter: life.meter, openStream });
    } else {
      const served = await callUpstream(svc, handler, parsed, plan, ex, group !== undefined);
      const { response, planned } = served;
      lease = served.lease;
      body = response?.body;
      ex.byok = planned.byok;
      await svc.hooks.run('upstream', ex, parsed);
      await svc.hooks.run('post-upstream', ex, parsed);
      const answer = { ex, parsed, route: planned.route, request, reply, meter: life.meter };
      metered = response ? await handler.respond({ ...answer, upstream: response, openStream }) : await respondLocally(handler, answer);
    }
    life.record(metered);
    await life.finish(true);
    await svc.hooks.run('billing', ex, parsed);
    await lease?.end(ex.usage ? ex.usage.input + ex.usage.output : 0);
  } catch (err) {
    // Unsettled (a failure before the reply, or a settle that threw): settled now, once.
    await life.finish(false);
    await lease?.end(ex.usage ? ex.usage.input + ex.usage.output : undefined);
    // A body left unread (a post-upstream hook threw, a plugin gave up on it) would hold its connection until the body timeout.
    body?.destroy();
    if (err instanceof GatewayError) err.withContext({ requestedModel: ex.requestedModel, usedProvider: ex.route?.provider.id });
    if (!reply.sent) throw err;
    request.log.error({ err, code: err instanceof GatewayError ? err.code : 'internal_error' }, 'model request failed after the reply started');
  }
}

function resolveRoutes<P extends ModelRequest>(svc: PipelineServices, model: string, handler: ModalityHandler<P>, now: number, group: ModelGroup | undefined): ModelRoute[] {
  const all = group ? groupRoutes(group, svc.catalog, handler.modality, svc.router) : svc.catalog.routesForModality(model, handler.modality);
  if (all.length === 0) throw handler.unknownModel?.(model) ?? new GatewayError('model_not_found', [model], { param: 'model' });
  const active = all.filter((r) => !r.model.deactivatedAt || Date.parse(r.model.deactivatedAt) > now);
  if (active.length === 0) {
    throw new GatewayError('model_deactivated', [model, all[0]?.model.deactivatedAt ?? ''], { param: 'model' });
  }
  return active;
}

/**
 * Each route's cost bound, computed and rounded up to micro-USD once per request: the
 * limits' budget check and the credit reservation both hold this same figure.
 */
function costBounds<P extends ModelRequest>(handler: ModalityHandler<P>, parsed: P): (route: ModelRoute) => Micros {
  const known = new Map<ModelRoute, Micros>();
  return (route) => {
    let bound = known.get(route);
    if (bound === undefined) known.set(route, (bound = Math.max(picosToMicrosCeil(handler.maxCostPicos(parsed, route)), 0)));
    return bound;
  };
}

/** The route with the endpoint the handler picks for this request, when it is not the modality's own. */
function withEndpoint<P extends ModelRequest>(handler: ModalityHandler<P>, parsed: P, route: ModelRoute): ModelRoute {
  const endpoint = handler.endpoint?.(parsed, route);
  return endpoint && endpoint !== route.endpoint ? { ...route, endpoint: bindEndpoint(endpoint, route.model) } : route;
}

/**
 * A key with a model allow-list may use only the routes of the models it names (a `provider/model` pin or an alias counts
 * as its model); a key allowed a model group may use the group's targets and fallbacks through it.
 */
function allowedRoutes(ex: Exchange, routes: ModelRoute[], group: ModelGroup | undefined): ModelRoute[] {
  const allowed = ex.apiKey?.allowedModels;
  if (!allowed || (group && allowed.includes(group.name))) return routes;
  const ok = routes.filter((r) => allowed.includes(r.model.id));
  if (ok.length === 0) throw new GatewayError('model_not_allowed', [ex.requestedModel ?? '', ex.apiKey?.prefix ?? '', allowed.join(', ')], { param: 'model' });
  return ok;
}

async function planRoutes(providerKeys: ProviderKeyCache, ex: Exchange, routes: ModelRoute[]): Promise<PlannedRoute[]> {
  const own = ex.org ? await providerKeys.keysOf(ex.org.id) : new Map<string, string>();
  return routes.map((route) => {
    const orgKey = own.get(route.provider.id);
    if (orgKey !== undefined) return { route, apiKey: orgKey, byok: true, deployments: [] };
    return { route, apiKey: route.provider.apiKey, byok: false, deployments: route.provider.deployments ?? [] };
  });
}

/**
 * Holds the most the request can cost on any route it may use. When the balance
 * cannot cover it, the request may still go through the routes where the org's own
 * provider key is used (spec §5); otherwise it is refused with 402.
 */
async function reserveCredit(
  svc: PipelineServices, life: RequestLifecycle, plan: PlannedRoute[], costBound: (route: ModelRoute) => Micros,
): Promise<PlannedRoute[]> {
  const org = life.ex.org;
  if (!org) throw new GatewayError('missing_api_key');
  const paid = plan.filter((p) => !p.byok);
  if (paid.length === 0) return plan;
  let amount = 0;
  for (const p of paid) amount = Math.max(amount, costBound(p.route));
  if (await life.reserve(org.id, amount)) return plan;
  const own = plan.filter((p) => p.byok);
  if (own.length > 0) return own;
  const balance = (await svc.store.getOrg(org.id))?.balanceMicros ?? 0;
  throw new GatewayError('insufficient_credits', [formatUsd(amount), formatUsd(balance)]);
}

function respondLocally<P extends ModelRequest>(handler: ModalityHandler<P>, ctx: Omit<RespondContext<P>, 'upstream' | 'openStream'>): Promise<Metered> {
  if (!handler.respondLocally) throw new Error(`the ${handler.modality} handler serves a route locally but has no respondLocally`);
  return handler.respondLocally(ctx);
}
