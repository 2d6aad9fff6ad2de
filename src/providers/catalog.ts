import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProviderOverride } from '../config/gateway-config.js';
import { assertValid, type ConfigSchemas } from '../config/schemas.js';
import { ConfigError, readYamlFile, type ConfigProblem, type YamlFile } from '../config/yaml-file.js';
import { parseUsdToPicos } from '../lib/money.js';
import type { UpstreamSigner } from './aws-sigv4.js';
import { compilePredicate, compileTransforms } from './transform.js';
import { signerFor } from './auth-schemes.js';
import { deploymentsOf } from './deployments.js';
import { resolveGoogleAuth, type GoogleAuthDef } from '../config/google-config.js';
import type { Capabilities, EndpointDef, ErrorRule, ModelDef, ModelRoute, PriceKey, PriceSet, ProviderDef, UnsupportedParamsPolicy } from './types.js';

/** What the core needs to know about each modality to accept a provider file. */
export interface ModalityRules {
  /** Prices a model of this modality must declare, so nothing is ever billed at $0 by omission. */
  requiredPricing: readonly PriceKey[];
  /** Dialect names this modality can speak, when its endpoints use one. */
  dialects: readonly string[];
  /** A rule every endpoint of this modality must follow; returns the problem, if any (e.g. music: exactly one call). */
  checkEndpoint?(endpoint: EndpointDef): string | undefined;
  /** A rule every model of this modality must follow (e.g. images: priced per image or per token); returns the problem. */
  checkModel?(model: ModelDef): string | undefined;
}

/**
 * Every provider and model from providers/*.yaml, indexed for routing. The same model
 * id may be served by several providers; their routes are tried in file-name order.
 */
export class ProviderCatalog {
  /** Everything the catalogue serves, replaced whole by `adopt` (a hot reload): a request reads it once. */
  private index: CatalogIndex;

  constructor(providers: ProviderDef[], models: Array<{ provider: ProviderDef; model: ModelDef }>) {
    const routes = new Map<string, ModelRoute[]>();
    const pinnedOnly = new Map<string, ModelRoute[]>();
    for (const { provider, model } of models) {
      const template = provider.endpoints[model.endpoint ?? model.modality];
      if (!template) continue;
      const endpoint = bindEndpoint(template, model);
      // A cloud whose auth scheme found no credentials (Vertex without a service account) is no
      // route for an unpinned id: a fallback would end on its refusal. Pinned, it says what is missing.
      const into = provider.auth.scheme && !provider.auth.scheme.account ? pinnedOnly : routes;
      // One object under the id and each alias: allRoutes() dedups by identity (issue 35).
      const route: ModelRoute = { provider, endpoint, model };
      for (const name of [model.id, ...model.aliases]) {
        const list = into.get(name) ?? [];
        list.push(route);
        into.set(name, list);
      }
    }
    this.index = { providers: new Map(providers.map((p) => [p.id, p])), routes, pinnedOnly, byModality: new Map(), groups: new Map() };
  }

  get providers(): ReadonlyMap<string, ProviderDef> {
    return this.index.providers;
  }

  /** The model groups of gateway.yaml `models:` (src/routing/groups.ts), for the model catalogue: name → targets and fallbacks. */
  get groups(): ReadonlyMap<string, { targets: readonly string[]; fallbacks: readonly string[] }> {
    return this.index.groups;
  }

  /** Sets the groups listed with this catalogue (before it serves, or before another catalogue adopts it). */
  setGroups(groups: ReadonlyMap<string, { targets: readonly string[]; fallbacks: readonly string[] }>): void {
    this.index = { ...this.index, groups };
  }

  /**
   * Serves `next`'s providers and models from now on (a hot reload, src/routing/reload.ts):
   * one assignment, so each lookup sees the old catalogue or the new one, never a mix;
   * requests that already hold their routes finish on them.
   */
  adopt(next: ProviderCatalog): void {
    this.index = next.index;
  }

  /**
   * Routes for a requested model id, or `provider/model` to pin one provider.
   * Returns an empty list when nothing serves it.
   */
  routesFor(requested: string): readonly ModelRoute[] {
    const { routes, pinnedOnly } = this.index;
    const direct = routes.get(requested);
    if (direct) return direct;
    const slash = requested.indexOf('/');
    if (slash <= 0) return [];
    const providerId = requested.slice(0, slash);
    const modelId = requested.slice(slash + 1);
    return [...(routes.get(modelId) ?? []), ...(pinnedOnly.get(modelId) ?? [])].filter((r) => r.provider.id === providerId);
  }

  /**
   * `routesFor` narrowed to one modality, looked up once per (modality, id): the lists of
   * ids something serves are kept (a bounded set, the catalogue's), unknown ids are not.
   */
  routesForModality(requested: string, modality: string): readonly ModelRoute[] {
    const index = this.index;
    const key = `${modality}\n${requested}`;
    const known = index.byModality.get(key);
    if (known) return known;
    const list = this.routesFor(requested).filter((r) => r.model.modality === modality);
    if (list.length > 0 && index === this.index) index.byModality.set(key, list);
    return list;
  }

  /** Every (provider, model) pair, for the model catalogue. */
  allRoutes(): ModelRoute[] {
    const seen = new Set<ModelRoute>();
    for (const list of [...this.index.routes.values(), ...this.index.pinnedOnly.values()]) for (const r of list) seen.add(r);
    return [...seen];
  }
}

interface CatalogIndex {
  providers: ReadonlyMap<string, ProviderDef>;
  routes: ReadonlyMap<string, readonly ModelRoute[]>;
  /** Routes of providers without credentials: reached only as `provider/model`. */
  pinnedOnly: ReadonlyMap<string, readonly ModelRoute[]>;
  byModality: Map<string, readonly ModelRoute[]>;
  groups: ReadonlyMap<string, { targets: readonly string[]; fallbacks: readonly string[] }>;
}

/** Where Microsoft Entra ID mints tokens when gateway.yaml names no `token_url`. */
const ENTRA_TOKEN_URL = 'https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token';

/**
 * An endpoint of this model's route: its `{deployment}` path variable filled with the
 * model's deployment (gateway.yaml `deployments`), so the plugins' `fillPath` sees only
 * the variables they fill. Endpoints without it are returned as they are.
 */
export function bindEndpoint(endpoint: EndpointDef, model: ModelDef): EndpointDef {
  if (model.deployment === undefined || !endpoint.path.includes('{deployment}')) return endpoint;
  return { ...endpoint, path: endpoint.path.replaceAll('{deployment}', encodeURIComponent(model.deployment)) };
}

interface RawEndpoint {
  modality?: string; method?: 'POST' | 'GET' | 'PUT'; path: string; query?: Record<string, string>; timeout_ms?: number;
  first_byte_timeout_ms?: number;
  retry?: { attempts: number; backoff_ms?: number; on?: Array<'connect_error' | '5xx' | '429'> };
  fallback?: boolean; dialect?: string; dialect_options?: Record<string, string>; upload?: 'multipart' | 'raw'; request?: unknown; response?: unknown;
}
interface RawModel {
  id: string; upstream_id?: string; modality: string; endpoint?: string; name?: string; aliases?: string[]; created?: number;
  description?: string; family?: string; input_modalities?: string[]; output_modalities?: string[];
  tokenizer?: string; is_moderated?: boolean; context_length?: number; max_output_tokens?: number;
  requires_max_tokens?: boolean; max_tokens_param?: 'max_tokens' | 'max_completion_tokens'; unsupported_params?: UnsupportedParamsPolicy;
  pricing_tiers?: Array<{ above_prompt_tokens: number; pricing: Partial<Record<PriceKey, string>> }>;
  pricing_variants?: Record<string, Partial<Record<PriceKey, string>>>; per_request_limits?: Record<string, string>; supported_parameters?: string[];
  json_output?: boolean; structured_outputs?: boolean; capabilities?: Partial<Capabilities>;
  deprecated_at?: string; deactivated_at?: string; stability?: string; pricing: Partial<Record<PriceKey, string>>;
}
interface RawProvider {
  id: string; name: string; enabled?: boolean; base_url: string;
  auth: { header?: string; format?: string; rejected_when?: string; entra?: { scope: string }; scheme?: 'aws-sigv4' | 'google-service-account'; service?: string };
  api_version?: { query: string; default: string }; errors?: Array<{ when: string; code: ErrorRule['code']; status?: number }>;
  error_types?: { header: string; kinds: Record<string, '5xx' | '429' | '4xx'> };
  headers?: Record<string, string>; endpoints: Record<string, RawEndpoint>; models: RawModel[]; unsupported_params?: UnsupportedParamsPolicy;
}

export interface LoadCatalogOptions {
  dir: string;
  schemas: ConfigSchemas;
  overrides: Record<string, ProviderOverride>;
  /** Where the overrides were written (gateway.yaml), to locate a problem with one. */
  overridesSource?: { file: string; lineOf(pointer: string): number | undefined };
  modalities: ReadonlyMap<string, ModalityRules>;
  env?: NodeJS.ProcessEnv;
}

/** Loads, validates and indexes every providers/*.yaml; all problems are reported together. */
export function loadCatalog(opts: LoadCatalogOptions): ProviderCatalog {
  let files: string[];
  try {
    files = readdirSync(opts.dir).filter((f) => /\.ya?ml$/.test(f)).sort();
  } catch {
    throw new ConfigError([{ file: opts.dir, line: undefined, path: '', message: 'providers directory cannot be read' }]);
  }
  const problems: ConfigProblem[] = [];
  const providers: ProviderDef[] = [];
  const models: Array<{ provider: ProviderDef; model: ModelDef }> = [];
  // Ids a refused file may declare (file name, parsed id): not also "declared by no file" (issue 35).
  const refused = new Set<string>();
  for (const name of files) {
    let declared: unknown;
    try {
      const file = readYamlFile(join(opts.dir, name), opts.env);
      declared = (file.data as { id?: unknown } | null)?.id;
      assertValid(opts.schemas.provider, file);
      const loaded = buildProvider(file, opts, problems);
      if (!loaded && typeof declared === 'string') refused.add(declared);
      if (!loaded || !enabled((file.data as RawProvider).enabled, opts.overrides[loaded.provider.id])) continue;
      if (providers.some((p) => p.id === loaded.provider.id)) {
        problems.push({ file: file.file, line: file.lineOf('/id'), path: '/id', message: `provider id "${loaded.provider.id}" is declared twice` });
        continue;
      }
      providers.push(loaded.provider);
      for (const model of loaded.models) models.push({ provider: loaded.provider, model });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      refused.add(name.replace(/\.ya?ml$/, ''));
      if (typeof declared === 'string') refused.add(declared);
    }
  }
  for (const id of Object.keys(opts.overrides)) {
    if (!providers.some((p) => p.id === id) && !refused.has(id) && opts.overrides[id]?.enabled !== false) {
      const path = `/providers/${id}`;
      problems.push({ file: opts.overridesSource?.file ?? 'gateway.yaml', line: opts.overridesSource?.lineOf(path), path, message: `no provider file declares id "${id}"` });
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return new ProviderCatalog(providers, models);
}

/** A provider file with `enabled: false` is loaded only when gateway.yaml names it (and does not say `enabled: false`). */
function enabled(byFile: boolean | undefined, override: ProviderOverride | undefined): boolean {
  if (override?.enabled !== undefined) return override.enabled;
  return byFile !== false || override !== undefined;
}

function buildProvider(file: YamlFile, opts: LoadCatalogOptions, problems: ConfigProblem[]): { provider: ProviderDef; models: ModelDef[] } | undefined {
  const raw = file.data as RawProvider;
  const override = opts.overrides[raw.id] ?? {};
  const problem = (path: string, message: string): void => {
    problems.push({ file: file.file, line: file.lineOf(path), path, message });
  };
  const overrideProblem = (key: string, message: string): void => {
    const path = `/providers/${raw.id}/${key}`;
    problems.push({ file: opts.overridesSource?.file ?? 'gateway.yaml', line: opts.overridesSource?.lineOf(path), path, message });
  };
  if (override.api_version !== undefined && !raw.api_version) {
    overrideProblem('api_version', `provider "${raw.id}" takes no api_version (its file ${file.file} declares none)`);
  }
  const apiVersion = raw.api_version ? { [raw.api_version.query]: override.api_version ?? raw.api_version.default } : {};
  const headerForm = raw.auth.header !== undefined || raw.auth.format !== undefined;
  if (raw.auth.scheme !== undefined && headerForm) problem('/auth', `auth scheme ${raw.auth.scheme} makes its own credentials: header and format do not apply`);
  if (raw.auth.scheme === undefined && (raw.auth.header === undefined || raw.auth.format === undefined)) problem('/auth', 'auth needs header and format (or a scheme)');
  const baseUrl = (override.base_url ?? raw.base_url).replace(/\/+$/, '');
  const scheme = authScheme(raw, baseUrl, opts, problems);
  const endpoints: Record<string, EndpointDef> = {};
  for (const [name, e] of Object.entries(raw.endpoints)) {
    const modality = e.modality ?? name;
    const rules = opts.modalities.get(modality);
    let endpoint: EndpointDef;
    try {
      endpoint = buildEndpoint(name, modality, { ...e, path: prefillPath(e.path, scheme.pathVars), query: { ...e.query, ...apiVersion } });
    } catch (err) {
      problem(`/endpoints/${name}`, `bad transform: ${(err as Error).message}`);
      continue;
    }
    if (!rules) {
      problem(`/endpoints/${name}`, `no loaded plugin serves the modality "${modality}" (known: ${[...opts.modalities.keys()].join(', ')})`);
      continue;
    }
    const fault = rules.checkEndpoint?.(endpoint);
    if (fault) problem(`/endpoints/${name}`, fault);
    if (e.dialect !== undefined && !rules.dialects.includes(e.dialect)) {
      problem(`/endpoints/${name}/dialect`, `unknown dialect "${e.dialect}" for ${modality} (known: ${rules.dialects.join(', ') || 'none'})`);
    }
    endpoints[name] = endpoint;
  }
  const usesDeployment = Object.values(raw.endpoints).some((e) => e.path.includes('{deployment}'));
  if (override.deployments && !usesDeployment) {
    overrideProblem('deployments', `provider "${raw.id}" has no {deployment} in its endpoint paths, so it takes no deployments`);
  } else {
    for (const id of Object.keys(override.deployments ?? {})) {
      if (!raw.models.some((m) => m.id === id)) overrideProblem(`deployments/${id}`, `provider "${raw.id}" has no model "${id}" (its models: ${raw.models.map((m) => m.id).join(', ')})`);
    }
  }
  const provider: ProviderDef = {
    id: raw.id,
    name: raw.name,
    file: file.file,
    baseUrl,
    auth: { header: raw.auth.header ?? 'authorization', format: raw.auth.format ?? '{key}', ...(scheme.def ? { scheme: scheme.def } : {}) },
    signer: authSigner(raw, override, opts.env ?? process.env, problem),
    errorKind: errorKinds(raw.error_types),
    keyRejected: compileRejection(raw.auth.rejected_when, problem),
    apiKey: override.api_key || undefined,
    deployments: deploymentsOf(raw.id, override, baseUrl, overrideProblem),
    entra: entraOf(raw, override, overrideProblem),
    errorRules: compileErrorRules(raw.errors, problem),
    headers: raw.headers ?? {},
    endpoints,
    unsupportedParams: raw.unsupported_params,
  };
  const models: ModelDef[] = [];
  raw.models.forEach((m, i) => {
    const own = m.endpoint === undefined ? undefined : raw.endpoints[m.endpoint];
    if (m.endpoint !== undefined && (own?.modality ?? m.endpoint) !== m.modality) {
      problem(`/models/${i}/endpoint`, `provider has no ${m.modality} endpoint named "${m.endpoint}"`);
      return;
    }
    if (!raw.endpoints[m.endpoint ?? m.modality]) {
      problem(`/models/${i}/modality`, `provider has no endpoint for modality "${m.modality}"`);
      return;
    }
    const rules = opts.modalities.get(m.modality);
    const missing = (rules?.requiredPricing ?? []).filter((k) => m.pricing[k] === undefined);
    if (missing.length > 0) {
      problem(`/models/${i}/pricing`, `a ${m.modality} model must price ${missing.join(', ')}`);
      return;
    }
    const model = buildModel(m);
    if (usesDeployment) model.deployment = override.deployments?.[m.id] ?? model.upstreamId;
    if (m.endpoint !== undefined && endpoints[m.endpoint]) endpoints[m.endpoint]!.namedByModels = true;
    const fault = rules?.checkModel?.(model);
    if (fault) problem(`/models/${i}`, fault);
    else models.push(model);
  });
  return { provider, models };
}

function entraOf(raw: RawProvider, override: ProviderOverride, problem: (key: string, message: string) => void): ProviderDef['entra'] {
  const e = override.entra;
  if (!e) return undefined;
  if (!raw.auth.entra) {
    problem('entra', `provider "${raw.id}" does not take Microsoft Entra tokens (its file declares no auth.entra)`);
    return undefined;
  }
  if (override.api_key) {
    problem('entra', `provider "${raw.id}": give api_key or entra, not both`);
    return undefined;
  }
  const tokenUrl = (e.token_url ?? ENTRA_TOKEN_URL).replace('{tenant_id}', encodeURIComponent(e.tenant_id));
  return { tokenUrl, clientId: e.client_id, clientSecret: e.client_secret, scope: raw.auth.entra.scope };
}

function compileErrorRules(rules: RawProvider['errors'], problem: (path: string, message: string) => void): ErrorRule[] | undefined {
  if (!rules) return undefined;
  const out: ErrorRule[] = [];
  rules.forEach((r, i) => {
    try {
      out.push({ status: r.status, code: r.code, when: compilePredicate(r.when, `errors[${i}].when`) });
    } catch (err) {
      problem(`/errors/${i}/when`, (err as Error).message);
    }
  });
  return out;
}

/** The signer of a provider whose `auth` names a scheme (auth-schemes.ts); a key header needs none. */
function authSigner(raw: RawProvider, override: ProviderOverride, env: NodeJS.ProcessEnv, problem: (path: string, message: string) => void): UpstreamSigner | undefined {
  const built = signerFor(raw, override, env);
  if (typeof built !== 'string') return built;
  problem('/auth', built);
  return undefined;
}

/** `error_types: { header, kinds }`: an error reply's kind by the type the provider names in that header (its value up to any `:`). */
function errorKinds(errors: RawProvider['error_types']): ProviderDef['errorKind'] {
  if (!errors) return undefined;
  const name = errors.header.toLowerCase();
  return (headers) => {
    const value = headers[name];
    const type = (Array.isArray(value) ? value[0] : value)?.split(':')[0]?.trim();
    return type ? errors.kinds[type] : undefined;
  };
}

/**
 * The provider's auth scheme, resolved from its gateway.yaml entry (a Google service
 * account), and the values it gives the endpoint paths' placeholders (`{project}`, `{location}`).
 */
function authScheme(raw: RawProvider, baseUrl: string, opts: LoadCatalogOptions, problems: ConfigProblem[]): { def: GoogleAuthDef | undefined; pathVars: Record<string, string> } {
  const override = opts.overrides[raw.id] ?? {};
  const file = opts.overridesSource?.file ?? 'gateway.yaml';
  const fault = (path: string, message: string): void => {
    problems.push({ file, line: opts.overridesSource?.lineOf(path), path, message });
  };
  if (raw.auth.scheme !== 'google-service-account') {
    if (override.google !== undefined) fault(`/providers/${raw.id}/google`, `provider ${raw.id} does not authenticate with a Google service account`);
    return { def: undefined, pathVars: {} };
  }
  if (override.api_key) fault(`/providers/${raw.id}/api_key`, `provider ${raw.id} authenticates with a Google service account: set providers.${raw.id}.google, not api_key`);
  const resolved = resolveGoogleAuth(raw.id, override.google, { baseDir: dirname(file), baseUrl, env: opts.env ?? process.env });
  for (const p of resolved.problems) fault(p.path, p.message);
  return { def: resolved.auth, pathVars: resolved.pathVars };
}

/** Fills the placeholders an auth scheme knows (`{project}`), each value percent-encoded into its segment; the rest stay for the request. */
function prefillPath(path: string, vars: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (whole, name: string) => (vars[name] === undefined ? whole : encodeURIComponent(vars[name])));
}

function compileRejection(source: string | undefined, problem: (path: string, message: string) => void): ProviderDef['keyRejected'] {
  if (source === undefined) return undefined;
  try {
    return compilePredicate(source, 'auth.rejected_when');
  } catch (err) {
    problem('/auth/rejected_when', (err as Error).message);
    return undefined;
  }
}

function buildEndpoint(name: string, modality: string, e: RawEndpoint): EndpointDef {
  return {
    name,
    modality,
    method: e.method ?? 'POST',
    path: e.path,
    query: e.query ?? {},
    timeoutMs: e.timeout_ms ?? 600_000,
    firstByteTimeoutMs: e.first_byte_timeout_ms,
    retry: { attempts: e.retry?.attempts ?? 1, backoffMs: e.retry?.backoff_ms ?? 100, on: e.retry?.on ?? ['connect_error'] },
    fallback: e.fallback ?? false,
    dialect: e.dialect,
    dialectOptions: e.dialect_options ?? {},
    namedByModels: false,
    upload: e.upload,
    transforms: compileTransforms(e.request, e.response),
  };
}

function priceSet(pricing: Partial<Record<PriceKey, string>>): PriceSet {
  const pricePicos: Partial<Record<PriceKey, bigint>> = {};
  for (const [k, v] of Object.entries(pricing) as Array<[PriceKey, string]>) pricePicos[k] = parseUsdToPicos(v);
  return { pricing, pricePicos };
}

function buildModel(m: RawModel): ModelDef {
  const { pricePicos } = priceSet(m.pricing);
  const tiers = (m.pricing_tiers ?? []).map((t) => ({ abovePromptTokens: t.above_prompt_tokens, ...priceSet(t.pricing) }))
    .sort((a, b) => a.abovePromptTokens - b.abovePromptTokens);
  const variants = Object.fromEntries(Object.entries(m.pricing_variants ?? {}).map(([k, v]) => [k, priceSet(v)]));
  const caps = m.capabilities ?? {};
  return {
    id: m.id,
    upstreamId: m.upstream_id ?? m.id,
    modality: m.modality,
    endpoint: m.endpoint,
    name: m.name ?? m.id,
    aliases: m.aliases ?? [],
    created: m.created ?? 0,
    description: m.description ?? '',
    family: m.family ?? '',
    inputModalities: m.input_modalities ?? ['text'],
    outputModalities: m.output_modalities ?? ['text'],
    tokenizer: m.tokenizer ?? 'Other',
    isModerated: m.is_moderated ?? false,
    contextLength: m.context_length ?? 0,
    maxOutputTokens: m.max_output_tokens,
    requiresMaxTokens: m.requires_max_tokens ?? false,
    maxTokensParam: m.max_tokens_param ?? 'max_tokens',
    unsupportedParams: m.unsupported_params,
    perRequestLimits: m.per_request_limits ?? {},
    supportedParameters: m.supported_parameters ?? [],
    jsonOutput: m.json_output ?? false,
    structuredOutputs: m.structured_outputs ?? false,
    capabilities: {
      streaming: caps.streaming ?? false, vision: caps.vision ?? false, documents: caps.documents ?? false,
      cancellation: caps.cancellation ?? false, tools: caps.tools ?? false,
      parallelToolCalls: caps.parallelToolCalls ?? false, reasoning: caps.reasoning ?? false,
    },
    deprecatedAt: m.deprecated_at,
    deactivatedAt: m.deactivated_at,
    stability: m.stability ?? 'stable',
    pricing: m.pricing,
    pricePicos,
    pricingTiers: tiers,
    pricingVariants: variants,
  };
}
