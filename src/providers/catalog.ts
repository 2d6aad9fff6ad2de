import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { assertValid, type ConfigSchemas } from '../config/schemas.js';
import { ConfigError, readYamlFile, type ConfigProblem } from '../config/yaml-file.js';
import type { ProviderOverride } from '../config/gateway-config.js';
import { buildProvider, type ProviderFileContext } from './provider-file.js';
import type { EndpointDef, ModelDef, ModelRoute, ProviderDef } from './types.js';

export type { ModalityRules } from './provider-file.js';

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

/**
 * An endpoint of this model's route: its `{deployment}` path variable filled with the
 * model's deployment (gateway.yaml `deployments`), so the plugins' `fillPath` sees only
 * the variables they fill. Endpoints without it are returned as they are.
 */
export function bindEndpoint(endpoint: EndpointDef, model: ModelDef): EndpointDef {
  if (model.deployment === undefined || !endpoint.path.includes('{deployment}')) return endpoint;
  return { ...endpoint, path: endpoint.path.replaceAll('{deployment}', encodeURIComponent(model.deployment)) };
}

/** Where the provider files are and how to check them; building each one is provider-file.ts's. */
export interface LoadCatalogOptions extends ProviderFileContext {
  dir: string;
  schemas: ConfigSchemas;
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
      if (!loaded || !enabled((file.data as { enabled?: boolean }).enabled, opts.overrides[loaded.provider.id])) continue;
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
