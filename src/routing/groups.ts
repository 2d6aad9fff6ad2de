import type { GatewayConfig } from '../config/gateway-config.js';
import { ConfigError, type ConfigProblem } from '../config/yaml-file.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { ModelRoute } from '../providers/types.js';
import type { Router } from './router.js';
import type { ModelGroup, RoutingSettings } from '../model/routing.js';

/**
 * The routing settings of a gateway.yaml against the catalogue it loaded: every group's
 * targets and fallbacks must be models the catalogue serves, and a group may not take the
 * name of one. All problems are reported together, at their file:line (as at boot).
 */
export function routingSettings(config: Pick<GatewayConfig, 'file' | 'lineOf' | 'routing' | 'models'>, catalog: ProviderCatalog): RoutingSettings {
  const problems: ConfigProblem[] = [];
  const problem = (path: string, message: string): void => {
    problems.push({ file: config.file, line: config.lineOf(path), path, message });
  };
  const groups = new Map<string, ModelGroup>();
  for (const [name, g] of Object.entries(config.models)) {
    if (catalog.routesFor(name).length > 0) problem(`/models/${name}`, `the group "${name}" has the name of a model the providers serve`);
    const check = (ids: readonly string[], field: string): void => {
      ids.forEach((id, i) => {
        if (config.models[id] !== undefined) problem(`/models/${name}/${field}/${i}`, `"${id}" is a group: a group's ${field} are models`);
        else if (catalog.routesFor(id).length === 0) problem(`/models/${name}/${field}/${i}`, `no provider serves the model "${id}"`);
      });
    };
    check(g.targets, 'targets');
    check(g.fallbacks ?? [], 'fallbacks');
    groups.set(name, { name, targets: g.targets, fallbacks: g.fallbacks ?? [], strategy: g.strategy ?? config.routing.strategy });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { strategy: config.routing.strategy, cooldownMs: config.routing.cooldownMs, groups };
}

/** A group's routes for one modality in the order they are tried: its targets as its strategy orders them, then its fallbacks in order. */
export function groupRoutes(group: ModelGroup, catalog: ProviderCatalog, modality: string, router: Router | undefined, random: () => number = Math.random): ModelRoute[] {
  const targets = group.targets.map((id) => catalog.routesForModality(id, modality)).filter((r) => r.length > 0);
  const score = (routes: readonly ModelRoute[]): number => {
    if (!router || group.strategy === 'weighted') return random();
    let best = Infinity;
    for (const r of routes) {
      for (const d of r.provider.deployments ?? []) {
        if (router.state(d) !== 'healthy') continue;
        const s = group.strategy === 'least_busy' ? router.busy(d) : (router.latencyMs(d) ?? 0);
        if (s < best) best = s;
      }
    }
    // A target with no healthy deployment goes last; ties are broken at random.
    return best + random() * 1e-6;
  };
  const ordered = targets.map((routes) => ({ routes, s: score(routes) })).sort((a, b) => a.s - b.s).flatMap((t) => t.routes);
  const fallbacks = group.fallbacks.flatMap((id) => catalog.routesForModality(id, modality));
  return [...ordered, ...fallbacks];
}
