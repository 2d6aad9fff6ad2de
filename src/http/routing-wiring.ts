import { basename, dirname } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { Limiter } from '../model/limits.js';
import type { RoutingAccess } from '../management/routes-routing.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { Telemetry } from '../telemetry/index.js';
import { CooldownBook } from '../routing/cooldown.js';
import { routingSettings } from '../routing/groups.js';
import { ConfigReloader } from '../routing/reload.js';
import { Router } from '../routing/router.js';
import type { Deployment } from '../model/routing.js';

export interface RoutingWiringOptions {
  config: GatewayConfig;
  /** The gateway's catalogue: a reload makes it serve the new providers (`adopt`). */
  catalog: ProviderCatalog;
  /** Reads gateway.yaml and providers/ again, as at boot; throws ConfigError with file:line problems. */
  reread(): { config: GatewayConfig; catalog: ProviderCatalog };
  redis: Redis | undefined;
  limiter: Limiter;
  telemetry: Telemetry | undefined;
  now: () => number;
  /** The server log (read when something is logged: the app is built after this). */
  log: () => FastifyBaseLogger;
}

export interface RoutingWiring {
  router: Router;
  access: RoutingAccess;
  /** Joins the shared cooldowns (Redis) and starts watching the config files. */
  start(): Promise<void>;
  close(): void;
}

/** The routing of one gateway: its router (deployments, cooldowns, groups), metrics and hot reload. Throws ConfigError for a bad `models:` at boot. */
export function wireRouting(o: RoutingWiringOptions): RoutingWiring {
  const { config, catalog, now, log } = o;
  const cooldowns = new CooldownBook({
    now, redis: o.redis, keyPrefix: config.redis?.keyPrefix,
    onError: (err, what) => log().warn({ err }, `${what} failed: cooldowns hold on this instance only until Redis answers`),
  });
  const deployments = (): Deployment[] => [...catalog.providers.values()].flatMap((p) => p.deployments ?? []);
  const holder: { router?: Router } = {};
  const metrics = o.telemetry?.routingMetrics({
    deployments: () => deployments().map((deployment) => ({ deployment, state: holder.router?.state(deployment) ?? 'healthy' })),
  });
  const settings = routingSettings(config, catalog);
  catalog.setGroups(settings.groups);
  const router = new Router({
    settings, cooldowns, now, limiter: o.limiter, observer: metrics,
    onKeyRejected: (d, status) => log().error(
      { provider: d.provider, deployment: d.name, status },
      `provider ${d.provider} refused the key of deployment "${d.name}": it is out of rotation until the config changes (gateway.yaml providers.${d.provider}.keys)`,
    ),
  });
  holder.router = router;
  const reloader = new ConfigReloader({
    running: config, now,
    load: () => {
      const next = o.reread();
      const nextSettings = routingSettings(next.config, next.catalog);
      next.catalog.setGroups(nextSettings.groups);
      return { ...next, settings: nextSettings };
    },
    apply: (next) => {
      catalog.adopt(next.catalog);
      router.replace(next.settings);
    },
    log: { info: (obj, msg) => log().info(obj, msg), warn: (obj, msg) => log().warn(obj, msg), error: (obj, msg) => log().error(obj, msg) },
    onResult: (r) => metrics?.reloaded(r.result),
  });
  return {
    router,
    access: { router, deployments, reloader },
    async start() {
      await cooldowns.start();
      if (!config.routing.watch) return;
      const file = basename(config.file);
      reloader.watch([
        { dir: dirname(config.file), match: (name) => name === file },
        { dir: config.providersDir, match: (name) => /\.ya?ml$/.test(name) },
      ]);
    },
    close() {
      reloader.close();
      cooldowns.close();
    },
  };
}
