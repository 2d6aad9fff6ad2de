import { Readable } from 'node:stream';
import { GatewayError } from '../lib/errors.js';
import { elapsedMs, serverCut, type Exchange } from './exchange.js';
import type { ModalityHandler, ModelRequest } from './plugin.js';
import type { ModelRoute } from '../providers/types.js';
import type { ExchangeObserver } from './events.js';
import { statusKind, UpstreamFailure, upstreamError, type UpstreamClient, type UpstreamRequest, type UpstreamResponse } from './upstream.js';
import type { Lease, NoDeployment, Router } from '../routing/router.js';
import type { Deployment } from '../model/routing.js';

/** A route chosen for this request, with the key the gateway will send upstream. */
export interface PlannedRoute {
  route: ModelRoute;
  /** The org's own key (BYOK), or the provider's single key when routing is not wired. */
  apiKey: string | undefined;
  byok: boolean;
  /** The gateway's deployments (keys) of the route's provider; empty with BYOK (the org's key is the one deployment). */
  deployments: readonly Deployment[];
}

export interface UpstreamServices {
  upstream: UpstreamClient;
  telemetry: ExchangeObserver | undefined;
  /** Picks and cools deployments; undefined (an embedder without it): each provider's single key. */
  router?: Router | undefined;
}

/** What answered: the response (none when served locally), its route, and the deployment taken until the request ends. */
export interface Served {
  response: UpstreamResponse | undefined;
  planned: PlannedRoute;
  lease: Lease | undefined;
}

/**
 * The upstream's response on the first route that answered. Within a route, each attempt
 * takes a deployment (src/routing/router.ts); one that fails with a 429, a 5xx, a timeout,
 * a refused connection or a refused key is taken out of rotation and the request moves
 * to another deployment at once, before the client sees anything (a move is not a retry:
 * it is bounded by the provider's deployments, the route's `retry` by its attempts). Then
 * routes fall back as their endpoints allow; a model group's routes (`group`) fall back
 * on any failure but a client error.
 */
export async function callUpstream<P extends ModelRequest>(
  svc: UpstreamServices, handler: ModalityHandler<P>, parsed: P, plan: readonly PlannedRoute[], ex: Exchange, group: boolean,
): Promise<Served> {
  let last: { failure: UpstreamFailure; planned: PlannedRoute } | undefined;
  let unavailable: { planned: PlannedRoute; why: NoDeployment } | undefined;
  const strategy = svc.router?.settings.strategy ?? 'weighted';
  for (const planned of plan) {
    const { route } = planned;
    if (last && !(group ? isGroupFallbackable(last.failure) : last.planned.route.endpoint.fallback && isFallbackable(last.failure))) break;
    ex.route = route;
    if (handler.servedLocally?.(parsed, route)) return { response: undefined, planned, lease: undefined };
    const timeout = handler.timeoutMs?.(route) ?? route.endpoint.timeoutMs;
    const tried = new Set<string>();
    const routed = svc.router !== undefined && planned.deployments.length > 0;
    let moves = 0;
    let reusable: UpstreamRequest | undefined;
    for (let attempt = 1; attempt <= route.endpoint.retry.attempts; attempt++) {
      let lease: Lease | undefined;
      if (routed) {
        const got = await svc.router!.acquire(planned.deployments, strategy, tried, ex.id, handler.maxTokens?.(parsed, route) ?? 0);
        if ('none' in got) {
          unavailable = { planned, why: got };
          break;
        }
        lease = got;
      }
      const started = elapsedMs(ex);
      const record = (status: number | null, error: string | null): void => {
        ex.attempts.push({
          provider: route.provider.id, model: route.model.upstreamId, status, error, durationMs: Math.round(elapsedMs(ex) - started),
          ...(lease ? { deployment: lease.deployment.name } : {}),
        });
      };
      let headers: UpstreamResponse['headers'] = {};
      try {
        // A body in memory is built once per route; a Readable one (an upload) is built anew for each attempt.
        const built = reusable ?? await handler.buildUpstream(parsed, route);
        if (!(built.body instanceof Readable)) reusable = built;
        const traceHeaders = svc.telemetry?.onAttemptStart(ex, route);
        // A stream that sends nothing for first_byte_timeout_ms (headers included) has stalled: nothing reached the client yet.
        const firstByte = built.stream ? route.endpoint.firstByteTimeoutMs : undefined;
        const apiKey = lease ? lease.deployment.apiKey : planned.apiKey;
        const response = await svc.upstream.send(route, built, apiKey, ex.abort.signal, { timeoutMs: timeout, firstByteMs: firstByte, traceHeaders, baseUrl: lease?.deployment.baseUrl });
        headers = response.headers;
        const byStatus = statusKind(response.statusCode);
        const kind = byStatus && (route.provider.errorKind?.(response.headers) ?? byStatus);
        if (!kind) {
          if (firstByte !== undefined) await response.body.firstByte(Math.max(1, firstByte - (elapsedMs(ex) - started)), ex.abort.signal, firstByte);
          record(response.statusCode, null);
          lease?.answered(elapsedMs(ex) - started);
          if (lease) ex.deployment = lease.deployment.name;
          svc.telemetry?.onAttemptEnd(ex, undefined, response.body);
          return { response, planned, lease };
        }
        const failure = new UpstreamFailure(kind, `status ${response.statusCode}`, response.statusCode, await readCapped(response, 64 * 1024));
        record(response.statusCode, failure.providerMessage || kind);
        throw failure;
      } catch (err) {
        if (!(err instanceof UpstreamFailure)) {
          await lease?.end(undefined);
          throw err;
        }
        if (err.status === null) record(null, err.message);
        svc.telemetry?.onAttemptEnd(ex, err.kind, undefined);
        last = { failure: err, planned };
        let out = false;
        if (lease) {
          const refused = err.kind === '4xx' && (err.status === 401 || err.status === 403 || (await keyRejected(route, err)));
          // A provider with one key is never taken out: there is nowhere else to send its traffic.
          out = svc.router!.failed(lease.deployment, err.kind, err.status, headers, refused, planned.deployments.length > 1);
          await lease.end(undefined);
          if (!out) tried.delete(lease.deployment.id);
        }
        if (err.kind === 'aborted') break;
        // Another deployment takes the request now: a move, not a retry of this one.
        if (out && tried.size < planned.deployments.length && ++moves < planned.deployments.length) {
          attempt--;
          continue;
        }
        if (attempt === route.endpoint.retry.attempts || !isRetryable(err, route)) break;
        await sleep(route.endpoint.retry.backoffMs * attempt);
      }
    }
  }
  if (!last) {
    if (unavailable) throw noDeployment(unavailable.planned, unavailable.why, Date.now());
    throw new GatewayError('model_not_found', [ex.requestedModel ?? '']);
  }
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

/** Every deployment of the route's provider out of rotation and nothing sent: 429 with when the first is back. */
function noDeployment(planned: PlannedRoute, why: NoDeployment, now: number): GatewayError {
  const reason = why.none === 'capacity' ? 'each is at its rpm/tpm capacity' : why.none === 'rejected' ? 'the provider refused each key' : 'each is cooling down after failing';
  const seconds = why.backAt !== undefined && why.backAt !== Infinity ? Math.max(1, Math.ceil((why.backAt - now) / 1000)) : undefined;
  return new GatewayError('no_deployment_available', [planned.route.provider.id, seconds === undefined ? reason : `${reason}; the first is back in ${seconds} s`], {
    ...(seconds !== undefined ? { headers: { 'retry-after': String(seconds) } } : {}),
  });
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

/** A model group moves to its next target or fallback on anything but a client error (a 4xx other than a refused key) or a client that left. */
function isGroupFallbackable(f: UpstreamFailure): boolean {
  return isFallbackable(f) || f.kind === '429' || (f.kind === '4xx' && (f.status === 401 || f.status === 403));
}

async function readCapped(response: UpstreamResponse, cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      if (size < cap) chunks.push(chunk.subarray(0, cap - size));
      size += chunk.length;
    }
  } catch {
    // A body that breaks while reading an error is still an error; what arrived is enough.
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
