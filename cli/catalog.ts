import type { GatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas, validatePluginSettings } from '../src/config/schemas.js';
import { selectPlugins } from '../plugins/index.js';
import { modalityRules } from '../src/gateway.js';
import { loadCatalog, type ProviderCatalog } from '../src/providers/catalog.js';
import { routingSettings } from '../src/routing/groups.js';
import { loadConfig } from './config.js';

/*
 * The config and every provider file, as `validate` checks them and `serve` needs them: the
 * heaviest load of the CLI (every plugin, the gateway's modality rules). A command imports
 * this module inside its action (`await import('./catalog.js')`), never at the top of its
 * file, so that `gateway --help` and the store commands do not load it.
 */

/** Loads the config and every provider file: what `validate` checks and `serve` needs. */
export function loadAll(file: string): { config: GatewayConfig; catalog: ProviderCatalog } {
  const config = loadConfig(file);
  const plugins = selectPlugins(config);
  for (const p of plugins) if (p.settingsSchema) validatePluginSettings(p.name, p.settingsSchema, config.settings[p.name], config);
  const catalog = loadCatalog({
    dir: config.providersDir, schemas: compileSchemas(), overrides: config.providers, overridesSource: config, modalities: modalityRules(plugins),
  });
  // Model groups are checked as the server checks them (`validate` names a group's bad target) and count as models (`--models smart`).
  catalog.setGroups(routingSettings(config, catalog).groups);
  return { config, catalog };
}
