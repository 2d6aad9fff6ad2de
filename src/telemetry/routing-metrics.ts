import { Counter, Gauge, type Registry } from 'prom-client';
import type { CooldownReason } from '../routing/cooldown.js';
import type { RoutingObserver } from '../routing/router.js';
import type { Deployment, DeploymentState } from '../model/routing.js';

/** `tollgate_deployment_state`'s values. */
const STATE_VALUE: Record<DeploymentState, number> = { healthy: 0, cooling: 1, rejected: 2 };

/** What the metrics read from routing when scraped: every configured deployment and its state now. */
export interface DeploymentSource {
  deployments(): Array<{ deployment: Deployment; state: DeploymentState }>;
}

/**
 * The routing metrics (docs/observability.md): each deployment's state, why deployments were
 * taken out, the requests each served, and the reloads of the configuration. Labels are
 * bounded: provider ids and key names come from the configuration, results from a fixed set.
 */
export class RoutingMetrics implements RoutingObserver {
  private readonly cooldowns;
  private readonly rejections;
  private readonly capacity;
  private readonly served;
  private readonly reloads;

  constructor(registry: Registry, source: DeploymentSource) {
    const registers = [registry];
    new Gauge({
      name: 'tollgate_deployment_state', help: 'Each deployment (provider key) now: 0 healthy, 1 cooling down (after a 429, 5xx, timeout or refused connection), 2 its key refused by the provider (out until the config changes).',
      labelNames: ['provider', 'deployment'], registers,
      collect() {
        // A reload may have removed deployments: only those configured now are reported.
        this.reset();
        for (const { deployment: d, state } of source.deployments()) this.set({ provider: d.provider, deployment: d.name }, STATE_VALUE[state]);
      },
    });
    this.cooldowns = new Counter({ name: 'tollgate_deployment_cooldowns_total', help: 'Deployments taken out of rotation by this instance, by reason (429, 5xx, timeout, connect_error).', labelNames: ['provider', 'deployment', 'reason'], registers });
    this.rejections = new Counter({ name: 'tollgate_deployment_key_rejections_total', help: 'Upstream answers refusing a deployment\'s key (401/403 or the provider\'s rejected_when); each is also logged at error level.', labelNames: ['provider', 'deployment'], registers });
    this.capacity = new Counter({ name: 'tollgate_deployment_capacity_skips_total', help: 'Times a deployment was skipped because it was at its rpm/tpm capacity.', labelNames: ['provider', 'deployment'], registers });
    this.served = new Counter({ name: 'tollgate_deployment_requests_total', help: 'Requests answered (one per request-log row) by the deployment that served them, by HTTP status.', labelNames: ['provider', 'deployment', 'status'], registers });
    this.reloads = new Counter({ name: 'tollgate_config_reloads_total', help: 'Reloads of gateway.yaml and providers/ (SIGHUP, POST /api/v1/reload, file changes), by result: ok, error (the running config kept serving).', labelNames: ['result'], registers });
  }

  cooled(d: Deployment, reason: CooldownReason): void {
    this.cooldowns.inc({ provider: d.provider, deployment: d.name, reason });
  }

  rejected(d: Deployment): void {
    this.rejections.inc({ provider: d.provider, deployment: d.name });
  }

  capacitySkipped(d: Deployment): void {
    this.capacity.inc({ provider: d.provider, deployment: d.name });
  }

  requestServed(provider: string, deployment: string, status: number): void {
    this.served.inc({ provider, deployment, status: String(status) });
  }

  reloaded(result: 'ok' | 'error'): void {
    this.reloads.inc({ result });
  }
}
