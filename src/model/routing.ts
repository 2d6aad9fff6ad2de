/** How a request picks among a provider's healthy deployments (docs/routing.md). */
export type RoutingStrategy = 'weighted' | 'least_busy' | 'lowest_latency';

/**
 * One key of a provider (gateway.yaml `providers.<id>.keys[]`, or its single `api_key`):
 * the unit traffic is spread over, cooled down and counted against its capacity.
 * Secret: `apiKey` is never logged nor shown (the management API shows `name` only).
 */
export interface Deployment {
  provider: string;
  name: string;
  apiKey: string | undefined;
  /** Where it is reached (its own `base_url`, else the provider's), without a trailing slash. */
  baseUrl: string;
  weight: number;
  /** Capacity per sliding minute (requests, tokens); undefined: none. */
  rpm: number | undefined;
  tpm: number | undefined;
  /**
   * `provider/name`, plus a digest of the key and URL: a key the provider rejected stays out
   * until this changes (a new key in the config is a new deployment as far as health goes).
   */
  id: string;
  fingerprint: string;
}

/** A model group (`models.<name>`), with the strategy that picks among its targets. */
export interface ModelGroup {
  name: string;
  targets: readonly string[];
  fallbacks: readonly string[];
  strategy: RoutingStrategy;
}

/** What routing reads on every request; one immutable value, replaced whole by a reload. */
export interface RoutingSettings {
  strategy: RoutingStrategy;
  cooldownMs: number;
  groups: ReadonlyMap<string, ModelGroup>;
}

/** A deployment's health as `GET /api/v1/deployments` and `tollgate_deployment_state` show it. */
export type DeploymentState = 'healthy' | 'cooling' | 'rejected';
