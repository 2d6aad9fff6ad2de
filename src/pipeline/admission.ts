import type { FastifyReply } from 'fastify';
import type { Exchange } from './exchange.js';
import type { Micros } from '../lib/money.js';
import type { ModalityHandler, ModelRequest } from './plugin.js';
import type { ModelRoute } from '../providers/types.js';
import type { ExchangeObserver } from './events.js';
import type { BudgetAlerts } from '../alerts/budget-alerts.js';
import { isLimited } from '../limits/spec.js';
import { ownerScope } from '../model/limit-scope.js';
import type { Hold, Limiter, LimitScope, LimitSpec } from '../model/limits.js';

/*
 * The limits step of the model pipeline (docs/limits.md): before the credit reservation
 * and any upstream call, the request is admitted against its key's and its project's
 * limits with its token and cost bounds; when it ends it is settled to what it used, or
 * released when it failed. Kept apart from pipeline.ts, which calls it in three places.
 */

export interface AdmissionServices {
  /** Undefined: no limits engine (an embedder that wires none); every request is admitted. */
  limiter?: Limiter | undefined;
  telemetry: ExchangeObserver | undefined;
  /** Budget thresholds checked after each settle (src/alerts/); undefined: no alerts. */
  alerts?: BudgetAlerts | undefined;
}

/** The limits scope of an API key (its counters in the limits store). */
export const keyScope = (k: { id: string; prefix: string; limits: LimitSpec }): LimitScope => ownerScope({ kind: 'key', id: k.id }, k.limits, `key ${k.prefix}`);
/** The limits scope of a project, shared by its keys. */
export const projectScope = (p: { id: string; name: string; limits: LimitSpec }): LimitScope => ownerScope({ kind: 'project', id: p.id }, p.limits, `project ${p.name}`);

/** The scopes a request counts against: its key and its key's project, those that limit something. */
function scopesOf(ex: Pick<Exchange, 'apiKey' | 'project'>): LimitScope[] {
  // Checked before anything is built: most keys have no limits, and this runs on every request.
  const scopes: LimitScope[] = [];
  if (ex.apiKey && isLimited(ex.apiKey)) scopes.push(keyScope(ex.apiKey));
  if (ex.project && isLimited(ex.project)) scopes.push(projectScope(ex.project));
  return scopes;
}

/** An admitted request's reservation: settle it or release it, once. */
export interface Admission {
  /** The request was billed: tpm and budget move from the bounds to what was recorded (`ex.usage`, `ex.costMicros`). */
  settle(ex: Exchange): Promise<void>;
  /** The request failed: nothing used (it still counts for rpm). */
  release(): Promise<void>;
}

/**
 * Admits the request or throws its 429 (`rate_limit_exceeded`, `budget_exceeded`) or
 * 503 (`limits_unavailable`), carrying the headers. The `x-ratelimit-*` headers are set
 * on the reply here, so every response of a limited key has them, 2xx and streams
 * included. Undefined when nothing limits the request.
 */
export async function admitLimits<P extends ModelRequest>(
  svc: AdmissionServices, ex: Exchange, reply: FastifyReply, handler: ModalityHandler<P>, parsed: P, routes: readonly ModelRoute[],
  costBound: (route: ModelRoute) => Micros,
): Promise<Admission | undefined> {
  const scopes = scopesOf(ex);
  if (!svc.limiter || scopes.length === 0) return undefined;
  let tokens = 0;
  let costMicros: Micros = 0;
  // The bounds of the dearest route it may take: the same cost bound (micro-USD, rounded up) as the credit reservation (BYOK routes too: a budget counts their cost).
  for (const route of routes) {
    tokens = Math.max(tokens, handler.maxTokens?.(parsed, route) ?? 0);
    costMicros = Math.max(costMicros, costBound(route));
  }
  const verdict = await svc.limiter.admit({ requestId: ex.id, scopes, tokens, costMicros });
  void reply.headers(verdict.headers);
  if (!verdict.ok) {
    if (verdict.refusedBy) svc.telemetry?.onRateLimitRejected(verdict.refusedBy.kind, verdict.refusedBy.owner?.kind === 'key' ? 'key' : 'project');
    throw verdict.error;
  }
  return admission(svc.limiter, verdict.hold, costMicros, svc.alerts, scopes);
}

function admission(limiter: Limiter, hold: Hold, costBound: Micros, alerts: BudgetAlerts | undefined, scopes: readonly LimitScope[]): Admission {
  let done = false;
  return {
    async settle(ex) {
      if (done) return;
      done = true;
      const tokens = ex.usage ? ex.usage.input + ex.usage.output : 0;
      const costMicros = Math.min(Math.max(ex.costMicros, 0), costBound);
      await limiter.settle(hold, { tokens, costMicros });
      // After the reply: the threshold check never delays it (and never rejects).
      if (alerts) void alerts.afterSettle(ex, scopes, costMicros, costBound);
    },
    async release() {
      if (done) return;
      done = true;
      await limiter.release(hold);
    },
  };
}
