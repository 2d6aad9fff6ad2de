import type { FastifyInstance } from 'fastify';
import { DEFAULT_REDIS_KEY_PREFIX } from '../config/gateway-config.js';
import { packageVersion } from '../lib/paths.js';
import type { Invalidator } from '../tenancy/invalidation.js';
import type { OrgRouteDef } from '../pipeline/plugin.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { Store } from '../store/types.js';
import type { Limiter, RedisLike } from '../limits/index.js';
import { authorize } from './authn.js';
import { SESSION_TTL_MS } from './credentials.js';
import type { ManagementDeps } from './deps.js';
import { mountManagement, type ManagementRoute } from './http.js';
import { dummyHash } from '../tenancy/passwords.js';
import type { ConsoleSettings } from '../config/console-config.js';
import { OidcSignIn } from './oidc.js';
import { accountRoutes } from './routes-account.js';
import { ssoRoutes } from './routes-sso.js';
import { auditRoutes } from './routes-audit.js';
import { logRoutes } from './routes-logs.js';
import { logExportRoutes } from './routes-logs-export.js';
import { orgAdminRoutes } from './routes-org-admin.js';
import { lifecycleRoutes } from './routes-lifecycle.js';
import { limitRoutes } from './routes-limits.js';
import { cacheRoutes } from './routes-cache.js';
import { webhookRoutes } from './routes-webhooks.js';
import { routingRoutes, type RoutingAccess } from './routes-routing.js';
import { orgRoutes as coreOrgRoutes } from './routes-orgs.js';
import { MemoryLoginThrottle, RedisLoginThrottle, type LoginThrottle } from './throttle.js';

export interface ManagementOptions {
  store: Store;
  catalog: ProviderCatalog;
  now: () => number;
  /** Where revocations and provider key changes are announced (src/tenancy/invalidation.ts). */
  invalidation: Invalidator;
  /** With Redis, sign-in throttling counts across instances. */
  redis: RedisLike | undefined;
  /** `redis.key_prefix`: the throttle's keys are `<prefix>login:…`. */
  redisKeyPrefix?: string | undefined;
  /** Plugin routes under /api/v1/orgs/:org (PluginApi.orgRoute); read when the app loads, so plugins may add to it after this call. */
  orgRoutes: readonly OrgRouteDef[];
  /** The gateway's limits engine (key and project reads show its counts). */
  limiter: Limiter;
  /** `console.public_url` and `console.oidc` (single sign-on). */
  console?: ConsoleSettings;
  /** `webhooks` of gateway.yaml (the SSRF rule for webhook URLs). */
  webhooks?: { allowPrivateUrls: boolean } | undefined;
  /** Deployments and hot reload (src/routing/): `GET /api/v1/deployments`, `POST /api/v1/reload`. */
  routing?: RoutingAccess | undefined;
  /** Overrides for tests. */
  throttle?: LoginThrottle;
  sessionTtlMs?: number;
}

/** Every route of the core's management API, each declaring who may call it (`access`). */
export function managementRoutes(deps: ManagementDeps, routing: RoutingAccess | undefined): ManagementRoute[] {
  return [
    ...accountRoutes(deps), ...ssoRoutes(deps), ...coreOrgRoutes(deps), ...limitRoutes(deps), ...orgAdminRoutes(deps), ...logRoutes(deps), ...logExportRoutes(deps),
    ...cacheRoutes(deps), ...lifecycleRoutes(deps), ...webhookRoutes(deps), ...auditRoutes(deps), ...routingRoutes(routing),
  ];
}

/**
 * The management API (`/api/v1`, `/api/openapi.json`) on the gateway's own fastify app:
 * organizations, projects, keys, members, credits, provider keys, the request log and
 * usage, for the web console and for automation (docs/management.md).
 */
export function registerManagement(app: FastifyInstance, opts: ManagementOptions): void {
  let dummy: Promise<string> | undefined;
  const deps: ManagementDeps = {
    store: opts.store, catalog: opts.catalog, now: opts.now, invalidation: opts.invalidation, limiter: opts.limiter,
    allowPrivateWebhookUrls: opts.webhooks?.allowPrivateUrls ?? false,
    throttle: opts.throttle ?? (opts.redis ? new RedisLoginThrottle(opts.redis, undefined, `${opts.redisKeyPrefix ?? DEFAULT_REDIS_KEY_PREFIX}login:`) : new MemoryLoginThrottle(undefined, opts.now)),
    sessionTtlMs: opts.sessionTtlMs ?? SESSION_TTL_MS,
    dummyHash: () => (dummy ??= dummyHash()),
    oidc: opts.console?.oidc && new OidcSignIn(opts.console.oidc, opts.store, opts.now),
    publicUrl: opts.console?.publicUrl,
  };
  mountManagement(app, () => ({
    routes: managementRoutes(deps, opts.routing),
    orgRoutes: opts.orgRoutes,
    store: opts.store,
    authorize: (request, access) => authorize(opts.store, request, access),
  }), packageVersion());
}
