import { GatewayError } from '../lib/errors.js';
import type { ConfigReloader, ReloadResult } from '../routing/reload.js';
import type { Router } from '../routing/router.js';
import type { Deployment } from '../model/routing.js';
import { route, type ManagementRoute } from './http.js';
import { int, list, maybe, num, obj, str, time } from './schemas.js';

/** What the routing routes read: the gateway's router, its configured deployments, its reloader. */
export interface RoutingAccess {
  router: Router;
  /** Every deployment of the providers served now (they change with a reload). */
  deployments(): Deployment[];
  reloader: ConfigReloader;
}

const DEPLOYMENT = obj({
  provider: str('Provider id'), name: str('The key\'s name (gateway.yaml providers.<id>.keys[].name; default for a single api_key)'),
  base_url: str('Where it is reached'), weight: num('Share of traffic under the weighted strategy'),
  rpm: maybe(int('Requests per minute it takes (null: no capacity set)')), tpm: maybe(int('Tokens per minute it takes')),
  state: str('healthy, cooling (after a 429, 5xx, timeout or refused connection) or rejected (its key refused: out until the config changes)', { enum: ['healthy', 'cooling', 'rejected'] }),
  reason: maybe(str('Why it is out: 429, 5xx, timeout, connect_error or key_rejected')),
  cooling_until: maybe(time('When a cooling deployment is back in rotation')),
  in_flight: int('Requests it holds on this instance now'),
  latency_ms: maybe(num('Moving average of its time to first byte on this instance (lowest_latency)')),
}, { title: 'Deployment' });

const GROUP = obj({ name: str(), targets: { type: 'array', items: str() }, fallbacks: { type: 'array', items: str() }, strategy: str() });

const RELOAD = obj({
  result: str('ok (the new config serves new requests) or error', { enum: ['ok', 'error'] }),
  trigger: str('signal, api or watch', { enum: ['signal', 'api', 'watch'] }), at: time(),
  restart_needed: { type: 'array', items: str(), description: 'Settings that changed but take effect only after a restart (e.g. server.port, database.url)' },
  problems: { type: 'array', items: str(), description: 'file:line: path: message, for a refused config' },
}, { title: 'ReloadResult' });

const reloadView = (r: ReloadResult) => ({ result: r.result, trigger: r.trigger, at: new Date(r.at).toISOString(), restart_needed: r.restartNeeded, problems: r.problems });

/** `GET /api/v1/deployments` and `POST /api/v1/reload` (docs/management.md, "Routing"): operators only. */
export function routingRoutes(access: RoutingAccess | undefined): ManagementRoute[] {
  const need = (): RoutingAccess => {
    if (!access) throw new GatewayError('not_found', ['routing is not wired in this gateway']);
    return access;
  };
  return [
    route({
      method: 'GET', url: '/api/v1/deployments', access: 'operator', tag: 'routing',
      summary: 'Every provider key (deployment) and its health as this instance sees it (cooldowns are shared by every instance with Redis), the strategy, the model groups and the latest reload.',
      schema: { response: { 200: list(DEPLOYMENT, { strategy: str(), cooldown_ms: int(), groups: { type: 'array', items: GROUP }, last_reload: { anyOf: [RELOAD, { type: 'null' }] } }) } },
      async handler() {
        const { router, reloader } = need();
        const data = need().deployments().map((d) => {
          const until = router.cooldowns.until(d);
          return {
            provider: d.provider, name: d.name, base_url: d.baseUrl, weight: d.weight, rpm: d.rpm ?? null, tpm: d.tpm ?? null,
            state: router.state(d), reason: router.cooldowns.reason(d) ?? null,
            cooling_until: until === undefined || until === Infinity ? null : new Date(until).toISOString(),
            in_flight: router.busy(d), latency_ms: router.latencyMs(d) ?? null,
          };
        });
        const s = router.settings;
        const last = reloader.lastResult;
        return {
          data, strategy: s.strategy, cooldown_ms: s.cooldownMs,
          groups: [...s.groups.values()].map((g) => ({ name: g.name, targets: [...g.targets], fallbacks: [...g.fallbacks], strategy: g.strategy })),
          last_reload: last ? reloadView(last) : null,
        };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/reload', access: 'operator', tag: 'routing',
      summary: 'Re-reads gateway.yaml and providers/ on this instance and serves them to new requests (in-flight ones finish on the old). An invalid config is refused (422 config_invalid, each problem as file:line) and the running one keeps serving.',
      schema: { response: { 200: RELOAD } },
      async handler() {
        const r = need().reloader.reload('api');
        if (r.result === 'error') throw new GatewayError('config_invalid', [r.problems.join('; ')]);
        return reloadView(r);
      },
    }),
  ];
}
