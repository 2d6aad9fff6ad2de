import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Authenticator } from './tenancy/auth.js';
import { BalanceAlerts } from './alerts/balance-alerts.js';
import { BudgetAlerts } from './alerts/budget-alerts.js';
import { DELIVERY_IDLE, WebhookDeliverer } from './alerts/delivery.js';
import { loadGatewayConfig, type GatewayConfig } from './config/gateway-config.js';
import { compileSchemas, validatePluginSettings } from './config/schemas.js';
import { registerConsole } from './http/console.js';
import { registerHealthRoute } from './http/health.js';
import { HookRegistry } from './pipeline/hooks.js';
import { guardrailsHook } from './guardrails/hook.js';
import { createInvalidationBus, type InvalidationBus } from './tenancy/invalidation.js';
import { createLimiter, type Limiter } from './limits/index.js';
import { registerManagement } from './management/index.js';
import { ProviderKeyCache } from './tenancy/provider-keys.js';
import type { GatewayPlugin, OrgRouteDef, PluginApi } from './pipeline/plugin.js';
import { loadCatalog, type ModalityRules, type ProviderCatalog } from './providers/catalog.js';
import { LedgerSpill } from './pipeline/ledger-spill.js';
import { RequestLogWriter } from './pipeline/request-log.js';
import { secretBoxFor } from './lib/secrets.js';
import { RequestLifecycles } from './pipeline/request-lifecycle.js';
import { addBodyParser, addModelRoute, addPlainRoute, createServer, type ServerDeps } from './http/server.js';
import { openStore } from './store/index.js';
import { packageRoot } from './lib/paths.js';
import { Telemetry } from './telemetry/index.js';
import { LEASE_HELD_ELSEWHERE } from './storage/media-sweep.js';
import { TaskRunner } from './http/tasks.js';
import type { Store } from './store/types.js';
import { UpstreamClient } from './pipeline/upstream.js';
import { CUT_GRACE_MS } from './pipeline/streamed-reply.js';
import { createResponseCache, registerCacheHook } from './cache/index.js';
import { wireRouting, type RoutingWiring } from './http/routing-wiring.js';
import type { ReloadResult } from './routing/reload.js';
import type { Router } from './routing/router.js';

export interface GatewayOptions {
  config: GatewayConfig;
  /**
   * The modality plugins to load, in order. The core never imports a plugin: the
   * composition root (the CLI, a test, an embedder) chooses them, e.g. with
   * `selectPlugins` from plugins/index.ts.
   */
  plugins: readonly GatewayPlugin[];
  /** Injectable clock (ms since epoch) for tests. */
  now?: () => number;
  /**
   * For `gateway sweep`: a gateway that only runs its plugins' maintenance tasks, beside
   * a server that may be running on the same database. Its store is opened as the admin
   * commands open it: on SQLite without the server's ledger lease, leaving reservations alone.
   */
  maintenanceOnly?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Where the server log goes (default stdout), at `log.level`. */
  logStream?: NodeJS.WritableStream;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly catalog: ProviderCatalog;
  readonly log: RequestLogWriter;
  /**
   * Pushed cache invalidation across instances (src/tenancy/invalidation.ts): `api_key` and
   * `provider_key` evict the core's caches; `limits` is for a limits cache to subscribe to.
   */
  readonly invalidation: InvalidationBus;
  /** Limits and budgets of keys and projects (Redis when `redis.url` is set, else in-process). */
  readonly limiter: Limiter;
  /** Deployments, cooldowns and model groups (src/routing/). */
  readonly router: Router;
  /**
   * Re-reads gateway.yaml and providers/ and serves them to new requests (SIGHUP, `gateway
   * reload`, file changes); an invalid config keeps the running one (docs/routing.md).
   */
  reload(): ReloadResult;
  /** Runs every plugin's maintenance task once (what `gateway sweep` does). */
  runTasks(): Promise<Array<{ task: string; result: string }>>;
  /** Schedules the maintenance tasks at their intervals (what `gateway serve` does). */
  startTasks(): void;
  /** Starts listening (and the metrics listener, when configured); returns the base URL (`http://host:port`). */
  listen(port?: number, metricsPort?: number): Promise<string>;
  /** The Prometheus scrape URL (`http://host:port/metrics`) once listening; undefined when metrics are off. */
  readonly metricsUrl: string | undefined;
  /**
   * Stops accepting, lets in-flight requests finish (cutting those still running at
   * server.shutdown_timeout_ms), flushes the request log, closes everything.
   */
  close(): Promise<void>;
}

/** Modality rules of every plugin; two plugins claiming one modality is a boot error. */
export function modalityRules(plugins: readonly GatewayPlugin[]): Map<string, ModalityRules> {
  const rules = new Map<string, ModalityRules>();
  const owner = new Map<string, string>();
  for (const p of plugins) {
    for (const [modality, r] of Object.entries(p.modalities)) {
      if (owner.has(modality)) throw new Error(`plugins "${owner.get(modality)}" and "${p.name}" both serve modality "${modality}"`);
      owner.set(modality, p.name);
      rules.set(modality, r);
    }
  }
  return rules;
}

/** Loads providers, opens the store and wires the core and the plugins into one app. */
export async function createGateway(opts: GatewayOptions): Promise<Gateway> {
  const { config } = opts;
  const now = opts.now ?? Date.now;
  const { plugins } = opts;
  const rules = modalityRules(plugins);
  const catalog = loadCatalog({
    dir: config.providersDir, schemas: compileSchemas(), overrides: config.providers, overridesSource: config, modalities: rules, env: opts.env,
  });
  // A hot reload reads the same files the same way (src/routing/reload.ts).
  const reread = (): { config: GatewayConfig; catalog: ProviderCatalog } => {
    const schemas = compileSchemas();
    const next = loadGatewayConfig(config.file, schemas, opts.env);
    return { config: next, catalog: loadCatalog({ dir: next.providersDir, schemas, overrides: next.providers, overridesSource: next, modalities: rules, env: opts.env }) };
  };
  const settings = new Map(plugins.map((p) => [p.name, p.settingsSchema ? validatePluginSettings(p.name, p.settingsSchema, config.settings[p.name], config) : config.settings[p.name]]));
  let inFlight = 0;
  // Before the store opens: a telemetry setup that fails leaves nothing open behind it.
  const telemetry = await Telemetry.create(config, catalog, { requestLogDepth: () => log.pending, requestsInFlight: () => inFlight });
  const secrets = secretBoxFor(config, opts.env);
  // Ledger faults (a heartbeat or reaper run while PostgreSQL is away) go to the server log once it exists.
  let reportTo: FastifyInstance | undefined;
  const server = opts.maintenanceOnly !== true;
  const store = openStore(config.database.url, now, {
    server, secrets: secrets?.box,
    postgres: { ...config.database, onError: (err, what) => reportTo?.log.error({ err }, `${what} failed; retrying`) },
  });
  // PostgreSQL: what could not be written while the database is away is kept on disk too (ledger-spill.ts).
  const spill = server && store.kind === 'postgres' ? new LedgerSpill(config.database.spillDir) : undefined;
  let spilled = false;
  // Optional services load their client libraries only when configured (memory of the embedded default).
  const objectStore = config.storage.s3 ? new (await import('./storage/s3.js')).S3ObjectStore(config.storage.s3) : undefined;
  const redis = config.redis
    ? new (await import('ioredis')).Redis(config.redis.url, { maxRetriesPerRequest: 1, connectTimeout: 2000 })
    : undefined;
  redis?.on('error', () => undefined); // reported by the health check, not thrown at the process
  const hooks = new HookRegistry();
  const closers: Array<() => Promise<void> | void> = [];
  const log = new RequestLogWriter(store, {
    flushIntervalMs: config.log.flushIntervalMs,
    batchSize: config.log.batchSize,
    onError: (err, rows) => app.log.error({ err, rows }, rows > 0 ? 'request log write failed; will retry' : "recording the API keys' last use failed"),
    onBacklog: spill && ((rows) => {
      spill.write({ rows: [...rows], settlements: store.settlementsFor(rows.map((r) => r.requestId)) });
      spilled = true;
    }),
    onDrained: spill && (() => {
      if (!spilled) return;
      spill.clear();
      spilled = false;
    }),
  });
  const upstream = new UpstreamClient({ now });
  const responseCache = createResponseCache({
    config: config.responseCache, catalog, upstream, now, observer: telemetry,
    redis: redis && config.redis && { client: redis, keyPrefix: config.redis.keyPrefix, timeoutMs: config.redis.timeoutMs },
    warn: (data, msg) => app.log.warn(data, msg),
  });
  let lastDegradedWarning = Number.NEGATIVE_INFINITY;
  const limiter = createLimiter({
    redis, now,
    keyPrefix: config.redis ? `${config.redis.keyPrefix}limits:` : undefined,
    timeoutMs: config.redis?.timeoutMs,
    // A budget's spend so far, when the engine has no counter: the request log, with the rows still queued here written first.
    seed: async (scopeId, since, owner) => {
      await log.flush();
      return store.limits.spentSince(owner ?? scopeId, since);
    },
    onDegraded: (kind, err) => {
      telemetry?.onLimitDegraded(kind);
      if (now() - lastDegradedWarning < 10_000) return;
      lastDegradedWarning = now();
      app.log.warn({ err: err.message, kind }, 'limits store (Redis) unavailable: rate limits are not enforced (fail open), budgets answer 503 limits_unavailable');
    },
  });
  const tasks = new TaskRunner((task, result) => {
    if (result instanceof Error) app.log.error({ err: result, task }, 'maintenance task failed; retrying at the next interval');
    // Another instance's turn says nothing new: at every tick of every other instance it would drown the runs' own lines.
    else if (result === LEASE_HELD_ELSEWHERE || result === DELIVERY_IDLE) app.log.debug({ task, result }, 'maintenance task skipped');
    else app.log.info({ task, result }, 'maintenance task ran');
  });
  const auth = new Authenticator(store, config.cache.ttlMs, now);
  const providerKeys = new ProviderKeyCache(store, config.cache.ttlMs, now);
  const invalidation = createInvalidationBus({
    databaseUrl: config.database.url, redisUrl: config.redis?.url, redisKeyPrefix: config.redis?.keyPrefix, redis,
    onError: (err, what) => app.log.warn({ err }, `${what} failed; caches fall back to their ${config.cache.ttlMs} ms TTL`),
  });
  invalidation.on('api_key', (prefix) => auth.evict(prefix));
  invalidation.on('provider_key', (orgId) => providerKeys.evict(orgId));
  // A project's limits travel with each of its keys' cached entries: drop them all (rare).
  invalidation.on('limits', () => auth.evict(null));
  const lifecycles = new RequestLifecycles({ store, telemetry, log, hooks });
  const alerts = new BudgetAlerts(limiter, store.webhooks, now, (err) => app.log.warn({ err }, 'budget alert check failed; the next settle checks again'), config.webhooks.budgetThresholds);
  // Before the app exists: a model group naming no served model fails the start at its file:line, as a reload would.
  const routing: RoutingWiring = wireRouting({ config, catalog, reread, redis, limiter, telemetry, now, log: () => app.log });
  const deps: ServerDeps = {
    streamStallMs: config.server.streamStallTimeoutMs, config, catalog, store, hooks, upstream, now, log, telemetry, limiter, alerts, auth, providerKeys, lifecycles,
    router: routing.router,
  };
  const app = createServer(deps, opts.logStream);
  reportTo = app;
  registerHealthRoute(app, { store, redis });
  registerConsole(app, join(packageRoot(), 'dist', 'console'));
  const orgRoutes: OrgRouteDef[] = [];
  registerManagement(app, {
    store, catalog, now, redis, redisKeyPrefix: config.redis?.keyPrefix, orgRoutes, invalidation, limiter, console: config.console, webhooks: config.webhooks, routing: routing.access,
  });
  try {
    // The sweep-only process of `gateway sweep` serves no requests: nothing of it to evict.
    if (opts.maintenanceOnly !== true) {
      // Each waits a bounded time for a Redis that does not answer: at once, so those waits do not add up.
      await Promise.all([invalidation.start(), routing.start()]);
    }
    // Provider keys from before encryption are sealed now; a wrong or missing key stops the start, naming the fix.
    const sealed = await store.providerKeys.sealPlaintext();
    if (sealed.sealed > 0) app.log.warn({ sealed: sealed.sealed }, 'encrypted provider keys that were stored in plaintext');
    // The projects' guardrails and body logging (docs/guardrails.md) run first at pre-upstream: a cache plugin's hook sees the masked request.
    hooks.add('guardrails', 'pre-upstream', guardrailsHook({ catalog, upstream, allowPrivateUrls: config.webhooks.allowPrivateUrls, onVerdict: telemetry && ((g, a) => telemetry.onGuardrailVerdict(g, a)) }));
    for (const plugin of plugins) {
      const api: PluginApi = {
        config, catalog, store, objectStore, now, log: app.log,
        settings: settings.get(plugin.name),
        task: (def) => tasks.add(def),
        hook: (stage, fn) => hooks.add(plugin.name, stage, fn),
        modelRoute: (def) => addModelRoute(app, deps, def),
        route: (def) => addPlainRoute(app, def),
        orgRoute: (def) => void orgRoutes.push(def),
        onClose: (fn) => closers.push(fn),
        bodyParser: (type, parser) => addBodyParser(app, type, parser),
        cache: responseCache,
      };
      await plugin.register(api);
    }
    registerCacheHook(hooks, responseCache);
    const deliverer = new WebhookDeliverer(store.webhooks, config.webhooks, now);
    const balanceAlerts = new BalanceAlerts(store.webhooks, now);
    tasks.add({
      name: 'webhook-delivery', intervalMs: WEBHOOK_POLL_MS,
      // Balance alerts first: an event they record goes out in the same run.
      run: async () => {
        const fired = await balanceAlerts.check();
        const delivered = await deliverer.run();
        return fired === 0 ? delivered : `${fired} balance alert(s) fired; ${delivered}`;
      },
    });
    tasks.add({
      name: 'audit-retention', intervalMs: 60 * 60 * 1000,
      run: async () => `deleted ${await store.auditLog.sweep(now() - config.audit.retentionDays * 86_400_000)} audit row(s) older than ${config.audit.retentionDays} days`,
    });
    tasks.add({
      name: 'request-bodies-retention', intervalMs: 60 * 60 * 1000,
      // Bodies past their project's body_logging.retention_days: the log rows and their costs stay.
      run: async () => {
        let deleted = 0;
        for (let n = -1; n !== 0; deleted += n) n = await store.bodies.deleteExpired(now(), 1000);
        return `deleted ${deleted} logged request bodies past their retention`;
      },
    });
    tasks.add({ name: 'console-sessions-purge', intervalMs: 60 * 60 * 1000, run: async () => `deleted ${await store.accounts.purgeSessions()} expired session(s), ${await store.accounts.sso.purgeFlows()} expired SSO flow(s)` });
    if (server) await store.releaseStaleReservations(now() - config.database.reservationMaxAgeMs);
    // Charges and rows a process of this host spilled before it died (the database away): written now, together.
    for (const orphan of spill?.orphans() ?? []) {
      store.adoptSettlements(orphan.spilled.settlements);
      log.enqueueAll(orphan.spilled.rows);
      await log.flush(); // written, or in this process's own spill file (onBacklog)
      rmSync(orphan.file, { force: true });
      app.log.warn({ file: orphan.file, rows: orphan.spilled.rows.length }, 'took over a spilled ledger file');
    }
  } catch (err) {
    // A boot failure must not leave the database, Redis or sockets open behind it.
    for (const fn of closers) await fn();
    routing.close();
    await Promise.all([app.close(), upstream.close(), limiter.close(), store.close(), telemetry?.close(), invalidation.close()]);
    redis?.disconnect();
    objectStore?.close();
    throw err;
  }
  let closed: Promise<void> | undefined;
  app.server.on('request', (_req, res) => {
    inFlight++;
    res.once('close', () => inFlight--);
  });
  return {
    app, store, catalog, log, invalidation, limiter,
    router: routing.router,
    reload: () => routing.access.reloader.reload('signal'),
    runTasks: () => tasks.runAll(),
    startTasks: () => tasks.start(),
    get metricsUrl() {
      return telemetry?.url;
    },
    async listen(port, metricsPort) {
      // Metrics first: a metrics port that is taken fails the start before the API takes traffic.
      if (config.metrics) await telemetry?.listen(metricsPort ?? config.metrics.port);
      await app.listen({ host: config.server.host, port: port ?? config.server.port });
      const addr = app.server.address();
      const p = typeof addr === 'object' && addr ? addr.port : port;
      return `http://${config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host}:${p}`;
    },
    close() {
      closed ??= (async () => {
        // Drain: stop accepting, let in-flight requests finish, then drop every remaining
        // socket. fastify's close() only drops sockets idle at that instant, and a keep-alive
        // (or half-closed) client socket would otherwise hold the server open.
        const drain = setInterval(() => {
          if (inFlight === 0) app.server.closeAllConnections();
          else app.server.closeIdleConnections();
        }, 50);
        // At server.shutdown_timeout_ms the requests still running are cut: a stream ends with the
        // drain_timeout error event and is billed for what was delivered, a reply not yet started
        // gets the 503; each settles and gets its log row before the store closes.
        // A reply its client does not read (a JSON body, an error event) gets CUT_GRACE_MS to get
        // out; then every connection still open is closed, so no client can hold the exit.
        let last: NodeJS.Timeout | undefined;
        const deadline = setTimeout(() => {
          lifecycles.cutAll();
          last = setTimeout(() => app.server.closeAllConnections(), CUT_GRACE_MS + 100);
        }, config.server.shutdownTimeoutMs);
        const closingAt = Date.now();
        try {
          await app.close();
          // Handlers that outlived their connections (clients that left) settle and queue their rows
          // before the last flush: a charge never goes out without its row. Bounded: past the
          // deadline they are cut, and they end at once.
          await lifecycles.waitForRows(closingAt + config.server.shutdownTimeoutMs + 5000);
        } finally {
          clearInterval(drain);
          clearTimeout(deadline);
          clearTimeout(last);
        }
        await tasks.stop();
        routing.close();
        for (const fn of closers) await fn();
        await log.close();
        // After the last request ended: its spans are exported before the process goes.
        await telemetry?.close();
        await upstream.close();
        // After the last request settled: its budget check, and its settle (or its replay), reach Redis before the client goes.
        await alerts.close();
        await limiter.close();
        await invalidation.close();
        redis?.disconnect();
        objectStore?.close();
        await store.close();
      })();
      return closed;
    },
  };
}

/** How often each instance looks for due webhook deliveries (docs/management.md, "Webhooks"). */
const WEBHOOK_POLL_MS = 1000;
