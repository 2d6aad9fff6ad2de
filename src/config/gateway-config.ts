import { type RawResponseCacheConfig, responseCacheConfig } from './cache-config.js';
import type { ResponseCacheConfig } from '../model/cache.js';
import { isIP } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { GoogleSettings } from './google-config.js';
import { DEFAULT_CALL_TIMEOUT_MS } from '../lib/redis-runner.js';
import { parseUsdToMicros, type Micros } from '../lib/money.js';
import { consoleSettings, type ConsoleSettings, type RawConsoleConfig } from './console-config.js';
import { assertValid, type ConfigSchemas } from './schemas.js';
import { ConfigError, readYamlFile, type YamlFile } from './yaml-file.js';
import type { RoutingStrategy } from '../model/routing.js';

export interface S3Config {
  bucket: string;
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

export interface ProviderOverride {
  base_url?: string;
  api_key?: string;
  /** Several keys (deployments) of the provider (docs/routing.md); not together with `api_key`. */
  keys?: DeploymentConfig[];
  enabled?: boolean;
  /** Replaces the provider file's `api_version.default` (Azure OpenAI's `api-version`). */
  api_version?: string;
  /** Model id → its name in the `{deployment}` path variable (Azure deployment names). */
  deployments?: Record<string, string>;
  /** Microsoft Entra ID client credentials, for providers whose file declares `auth.entra`. */
  entra?: { tenant_id: string; client_id: string; client_secret: string; token_url?: string };
  /** Region and credentials of a provider whose auth is aws-sigv4 (src/providers/aws-sigv4.ts); absent credentials: the standard AWS chain. */
  aws?: { region?: string; access_key_id?: string; secret_access_key?: string; session_token?: string };
  /** A provider whose auth is `google-service-account` (Vertex AI): its project, location and key. */
  google?: GoogleSettings;
}

/** One key of a provider (`providers.<id>.keys[]`): a deployment traffic is spread over. */
export interface DeploymentConfig {
  name: string;
  api_key?: string;
  base_url?: string;
  weight?: number;
  rpm?: number;
  tpm?: number;
}

/** How a deployment or a model group's target is chosen (docs/routing.md). */
export type { RoutingStrategy };

/** A model group (`models.<name>`): requested like a model, served by its targets, then its fallbacks. */
export interface ModelGroupConfig {
  targets: string[];
  strategy?: RoutingStrategy;
  fallbacks?: string[];
}

/** OpenTelemetry trace export (OTLP over HTTP, JSON). */
export interface OtlpConfig {
  /** The collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  /** Extra HTTP headers on every export (e.g. a collector's auth token). */
  headers: Record<string, string>;
  /** Prompt text in spans, for orgs whose retention is `standard` (never for `none`). */
  includePrompts: boolean;
  serviceName: string;
  /** Share of new traces recorded (0–1); a caller's sampled `traceparent` is always followed. */
  sampleRatio: number;
}

/**
 * `server.trust_proxy`: none (false), everyone (true), or these proxy addresses and CIDR
 * ranges. No hop count: it trusts whoever connects, so a client reaching the gateway
 * directly could still choose its address (fastify now refuses counts for that reason).
 */
export type TrustProxy = boolean | string[];

/** gateway.yaml after validation, with defaults applied and paths made absolute. */
/**
 * The default start of every Redis name (`redis.key_prefix`): the limits' keys
 * (`tollgate:limits:…`), the sign-in throttle's (`tollgate:login:…`) and the invalidation
 * channel (`tollgate:invalidate`). Deployments sharing one Redis set different prefixes.
 */
export const DEFAULT_REDIS_KEY_PREFIX = 'tollgate:';

export interface GatewayConfig {
  file: string;
  /** Line of a setting in the file (for problems found later, e.g. an override of an unknown provider). */
  lineOf(pointer: string): number | undefined;
  /**
   * `trustProxy`: which senders may set the client address and scheme (`X-Forwarded-*`), as
   * fastify's option: false none, a list of addresses/CIDRs, true everyone.
   */
  server: { host: string; port: number; bodyLimitBytes: number; shutdownTimeoutMs: number; streamStallTimeoutMs: number; trustProxy: TrustProxy };
  /**
   * `pool_size`: PostgreSQL connections per instance. `instance_timeout_ms`: an instance silent
   * this long is dead and the reaper releases its reservations. `reservation_max_age_ms`: any
   * reservation older is released (the backstop). `spill_dir`: where settlements and log rows
   * go while PostgreSQL is away at shutdown (absolute). `balance_slice_usd`: how much of a busy
   * org's balance an instance takes at a time to reserve against in memory (0: none; every
   * request reserves on the org's row; see src/store/postgres-slices.ts).
   */
  database: { url: string; poolSize: number; instanceTimeoutMs: number; reservationMaxAgeMs: number; spillDir: string; balanceSliceMicros: number };
  /**
   * `keyPrefix`: start of every Redis name the gateway uses — limits, sign-in throttle, invalidation channel (default `tollgate:`).
   * `timeoutMs`: bound on each limits call; past it Redis counts as down for that request (default 500).
   */
  redis: { url: string; keyPrefix: string; timeoutMs: number } | undefined;
  /** How long API keys and provider keys are cached between database reads; changes are also pushed (src/tenancy/invalidation.ts). */
  cache: { ttlMs: number };
  /** `response_cache`: bounds and defaults of the response cache (src/config/cache-config.ts, docs/cache.md). */
  responseCache: ResponseCacheConfig;
  /** The audit log: rows older than this many days are deleted by the `audit-retention` task. */
  audit: { retentionDays: number };
  /** `secrets.key_file`, absolute; see src/lib/secrets.ts for the order of key sources. */
  secrets: { keyFile: string | undefined };
  /**
   * Alerts' webhooks (docs/management.md, "Webhooks"). `allowPrivateUrls`: accept URLs
   * whose host is or resolves to a private, loopback or link-local address (default false:
   * refused, SSRF). `retryInitialMs`: the first retry's delay, doubling after (default 5000).
   * `retryMaxHours`: how long a delivery is retried before it is given up (default 24).
   */
  webhooks: { allowPrivateUrls: boolean; retryInitialMs: number; retryMaxHours: number; budgetThresholds: readonly number[] };
  storage: { s3: S3Config | undefined };
  providersDir: string;
  plugins: string[] | undefined;
  providers: Record<string, ProviderOverride>;
  /**
   * `routing`: the default strategy, the cooldown of a failed deployment without Retry-After,
   * and whether the files are watched for hot reload (docs/routing.md).
   */
  routing: { strategy: RoutingStrategy; cooldownMs: number; watch: boolean };
  /** `models`: model groups by name. */
  models: Record<string, ModelGroupConfig>;
  log: { flushIntervalMs: number; batchSize: number; level: string };
  simulator: { port: number } | undefined;
  /** The Prometheus listener (`GET /metrics`), on its own host and port; off when absent. */
  metrics: { host: string; port: number } | undefined;
  telemetry: { otlp: OtlpConfig | undefined };
  bootstrap: { org: string; credits: Micros } | undefined;
  /** `console.public_url` and `console.oidc` (single sign-on): src/config/console-config.ts. */
  console: ConsoleSettings;
  /** Per-plugin settings blocks, validated by each plugin's own schema at boot. */
  settings: Record<string, unknown>;
}

interface RawGatewayConfig {
  extends?: string;
  server?: { host?: string; port?: number; body_limit_bytes?: number; shutdown_timeout_ms?: number; stream_stall_timeout_ms?: number; trust_proxy?: TrustProxy };
  database?: { url: string; pool_size?: number; instance_timeout_ms?: number; reservation_max_age_ms?: number; spill_dir?: string; balance_slice_usd?: string };
  redis?: { url: string; key_prefix?: string; timeout_ms?: number };
  cache?: { ttl_ms?: number };
  response_cache?: RawResponseCacheConfig;
  audit?: { retention_days?: number };
  secrets?: { key_file?: string };
  webhooks?: { allow_private_urls?: boolean; retry_initial_ms?: number; retry_max_hours?: number; budget_thresholds?: number[] };
  storage?: { s3?: { bucket: string; endpoint?: string; region?: string; access_key_id?: string; secret_access_key?: string; force_path_style?: boolean } };
  providers_dir?: string;
  plugins?: string[];
  providers?: Record<string, ProviderOverride>;
  routing?: { strategy?: RoutingStrategy; cooldown_ms?: number; watch?: boolean };
  models?: Record<string, ModelGroupConfig>;
  log?: { flush_interval_ms?: number; batch_size?: number; level?: string };
  simulator?: { enabled?: boolean; port?: number };
  metrics?: { host?: string; port?: number };
  telemetry?: { otlp?: { endpoint: string; headers?: Record<string, string>; include_prompts?: boolean; service_name?: string; sample_ratio?: number } };
  bootstrap?: { org: string; credits_usd: string };
  console?: RawConsoleConfig;
  settings?: Record<string, unknown>;
}

/**
 * Reads and validates gateway.yaml; relative paths resolve against the folder of the
 * file that sets them. A file may `extends:` another (e.g. an example built on the
 * default gateway.yaml): each file is validated on its own, then the extending file's
 * settings are laid over the base's — maps merged key by key, anything else replaced.
 */
export function loadGatewayConfig(file: string, schemas: ConfigSchemas, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const { raw, lineOf } = readLayered(file, schemas, env, []);
  const dir = dirname(resolve(file));
  const at = (p: string): string => (isAbsolute(p) ? p : resolve(dir, p));
  const dbUrl = raw.database?.url ?? 'sqlite:./data/tollgate.db';
  const s3 = raw.storage?.s3;
  return {
    file: resolve(file),
    lineOf,
    server: {
      host: raw.server?.host ?? '127.0.0.1',
      port: raw.server?.port ?? 8787,
      bodyLimitBytes: raw.server?.body_limit_bytes ?? 1024 * 1024,
      shutdownTimeoutMs: raw.server?.shutdown_timeout_ms ?? 30_000,
      streamStallTimeoutMs: raw.server?.stream_stall_timeout_ms ?? 60_000,
      trustProxy: trustProxyOf(raw.server?.trust_proxy, resolve(file), lineOf),
    },
    // A relative SQLite path is relative to the config file, like every other path in it.
    database: {
      url: dbUrl.startsWith('sqlite:') && dbUrl !== 'sqlite::memory:' ? `sqlite:${at(dbUrl.slice(7))}` : dbUrl,
      poolSize: raw.database?.pool_size ?? 10,
      instanceTimeoutMs: raw.database?.instance_timeout_ms ?? 30_000,
      reservationMaxAgeMs: raw.database?.reservation_max_age_ms ?? 60 * 60 * 1000,
      spillDir: at(raw.database?.spill_dir ?? './data'),
      balanceSliceMicros: parseUsdToMicros(raw.database?.balance_slice_usd ?? '1'),
    },
    redis: raw.redis && { url: raw.redis.url, keyPrefix: raw.redis.key_prefix ?? DEFAULT_REDIS_KEY_PREFIX, timeoutMs: raw.redis.timeout_ms ?? DEFAULT_CALL_TIMEOUT_MS },
    cache: { ttlMs: raw.cache?.ttl_ms ?? 1000 },
    responseCache: responseCacheConfig(raw.response_cache),
    audit: { retentionDays: raw.audit?.retention_days ?? 365 },
    secrets: { keyFile: raw.secrets?.key_file === undefined ? undefined : at(raw.secrets.key_file) },
    webhooks: {
      allowPrivateUrls: raw.webhooks?.allow_private_urls ?? false,
      retryInitialMs: raw.webhooks?.retry_initial_ms ?? 5000,
      retryMaxHours: raw.webhooks?.retry_max_hours ?? 24,
      // Ascending and each once, whatever order the file gives them in.
      budgetThresholds: [...new Set(raw.webhooks?.budget_thresholds ?? [50, 80, 100])].sort((a, b) => a - b),
    },
    storage: {
      s3: s3 && {
        bucket: s3.bucket,
        endpoint: s3.endpoint,
        region: s3.region ?? 'us-east-1',
        accessKeyId: s3.access_key_id,
        secretAccessKey: s3.secret_access_key,
        forcePathStyle: s3.force_path_style ?? false,
      },
    },
    providersDir: at(raw.providers_dir ?? './providers'),
    plugins: raw.plugins,
    providers: raw.providers ?? {},
    routing: { strategy: raw.routing?.strategy ?? 'weighted', cooldownMs: raw.routing?.cooldown_ms ?? 30_000, watch: raw.routing?.watch ?? true },
    models: raw.models ?? {},
    log: { flushIntervalMs: raw.log?.flush_interval_ms ?? 200, batchSize: raw.log?.batch_size ?? 500, level: raw.log?.level ?? 'info' },
    simulator: raw.simulator && raw.simulator.enabled !== false ? { port: raw.simulator.port ?? 8790 } : undefined,
    metrics: raw.metrics && { host: raw.metrics.host ?? '127.0.0.1', port: raw.metrics.port ?? 9464 },
    telemetry: { otlp: otlpConfig(raw.telemetry?.otlp) },
    bootstrap: raw.bootstrap && { org: raw.bootstrap.org, credits: parseUsdToMicros(raw.bootstrap.credits_usd) },
    console: consoleSettings(raw.console, resolve(file), lineOf),
    settings: raw.settings ?? {},
  };
}

/** One config file and the files it extends, merged, with its relative paths made absolute. */
function readLayered(file: string, schemas: ConfigSchemas, env: NodeJS.ProcessEnv, chain: string[]): { raw: RawGatewayConfig; lineOf: YamlFile['lineOf'] } {
  const yamlFile = readYamlFile(file, env);
  if (yamlFile.data === null || yamlFile.data === undefined) yamlFile.data = {};
  assertValid(schemas.gateway, yamlFile);
  const own = absolutePaths(yamlFile.data as RawGatewayConfig, dirname(resolve(file)));
  const { extends: baseName, ...settings } = own;
  if (baseName === undefined) return { raw: settings, lineOf: yamlFile.lineOf };
  const base = resolve(dirname(resolve(file)), baseName);
  if ([...chain, resolve(file)].includes(base)) {
    throw new ConfigError([{ file, line: yamlFile.lineOf('/extends'), path: '/extends', message: `${baseName} extends this file again (a cycle)` }]);
  }
  const under = readLayered(base, schemas, env, [...chain, resolve(file)]);
  return { raw: overlay(under.raw, settings) as RawGatewayConfig, lineOf: yamlFile.lineOf };
}

/** The paths a file sets, resolved against its own folder, so that they mean the same once merged into another file. */
function absolutePaths(raw: RawGatewayConfig, dir: string): RawGatewayConfig {
  const at = (p: string): string => (isAbsolute(p) ? p : resolve(dir, p));
  const url = raw.database?.url;
  return {
    ...raw,
    ...(raw.providers_dir !== undefined ? { providers_dir: at(raw.providers_dir) } : {}),
    ...(raw.database ? {
      database: {
        ...raw.database,
        ...(url?.startsWith('sqlite:') && url !== 'sqlite::memory:' ? { url: `sqlite:${at(url.slice(7))}` } : {}),
        ...(raw.database.spill_dir !== undefined ? { spill_dir: at(raw.database.spill_dir) } : {}),
      },
    } : {}),
  };
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `top` laid over `base`: maps merged key by key, anything else (scalars, lists) replaced. */
function overlay(base: unknown, top: unknown): unknown {
  if (!isMap(base) || !isMap(top)) return top === undefined ? base : top;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(top)) out[k] = overlay(base[k], v);
  return out;
}

function otlpConfig(raw: NonNullable<RawGatewayConfig['telemetry']>['otlp']): OtlpConfig | undefined {
  if (!raw) return undefined;
  return {
    endpoint: raw.endpoint.replace(/\/+$/, ''),
    headers: raw.headers ?? {},
    includePrompts: raw.include_prompts ?? false,
    serviceName: raw.service_name ?? 'tollgate',
    sampleRatio: raw.sample_ratio ?? 1,
  };
}

/** Names proxy-addr (fastify's trustProxy) accepts for ranges of private addresses. */
const ADDRESS_RANGES: ReadonlySet<string> = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** The trust_proxy setting, each listed address checked here (a typo would otherwise fail the start with fastify's bare TypeError). */
function trustProxyOf(value: TrustProxy | undefined, file: string, lineOf: YamlFile['lineOf']): TrustProxy {
  if (!Array.isArray(value)) return value ?? false;
  const bad = value.map((entry, i) => ({ entry, i })).filter(({ entry }) => !ADDRESS_RANGES.has(entry) && !isAddressOrRange(entry));
  if (bad.length > 0) {
    throw new ConfigError(bad.map(({ entry, i }) => ({
      file, line: lineOf(`/server/trust_proxy/${i}`), path: `/server/trust_proxy/${i}`,
      message: `${entry} is not an IP address, a CIDR range (10.0.0.0/8) or one of ${[...ADDRESS_RANGES].join(', ')}`,
    })));
  }
  return value;
}

function isAddressOrRange(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
