import { dirname } from 'node:path';
import type { ProviderOverride } from '../config/gateway-config.js';
import type { ConfigProblem, YamlFile } from '../config/yaml-file.js';
import { resolveGoogleAuth, type GoogleAuthDef } from '../config/google-config.js';
import { parseUsdToPicos } from '../lib/money.js';
import type { UpstreamSigner } from './aws-sigv4.js';
import { compilePredicate, compileTransforms } from './transform.js';
import { signerFor } from './auth-schemes.js';
import { deploymentsOf } from './deployments.js';
import type { Capabilities, EndpointDef, ErrorRule, ModelDef, PriceKey, PriceSet, ProviderDef, UnsupportedParamsPolicy } from './types.js';

/*
 * One providers/*.yaml file, already parsed and schema-checked, merged with its gateway.yaml
 * override (`providers.<id>`: base_url, api_key, api_version, deployments, entra, google) and
 * built into a ProviderDef and its models. Problems are collected, not thrown: loadCatalog
 * (catalog.ts) reports every file's together.
 */

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

/** What building one provider file needs besides the file: gateway.yaml's overrides and the plugins' modalities. */
export interface ProviderFileContext {
  overrides: Record<string, ProviderOverride>;
  /** Where the overrides were written (gateway.yaml), to locate a problem with one. */
  overridesSource?: { file: string; lineOf(pointer: string): number | undefined };
  modalities: ReadonlyMap<string, ModalityRules>;
  env?: NodeJS.ProcessEnv;
}

/** Where Microsoft Entra ID mints tokens when gateway.yaml names no `token_url`. */
const ENTRA_TOKEN_URL = 'https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token';

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

/** The provider of one file and the models it serves; what is wrong with either goes to `problems`. */
export function buildProvider(file: YamlFile, opts: ProviderFileContext, problems: ConfigProblem[]): { provider: ProviderDef; models: ModelDef[] } | undefined {
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
function authScheme(raw: RawProvider, baseUrl: string, opts: ProviderFileContext, problems: ConfigProblem[]): { def: GoogleAuthDef | undefined; pathVars: Record<string, string> } {
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
