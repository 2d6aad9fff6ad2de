import type { FastifyRequest } from 'fastify';
import { GatewayError, type GatewayPlugin, invalidField } from '../../src/sdk.js';
import { groupRecords, modelRecords, type CatalogueFilter, type ModelRecord } from './records.js';

/**
 * A boolean query flag (spec §4.7 types them as strings): `true`/`1`/`yes`, or the
 * bare flag (`?include_deactivated`), mean true; `false`/`0`/`no` or absence mean false.
 */
function queryFlag(request: FastifyRequest, name: string): boolean {
  const raw = (request.query as Record<string, unknown> | undefined)?.[name];
  const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (value === undefined) return false;
  const v = String(value).trim().toLowerCase();
  if (v === '' || v === 'true' || v === '1' || v === 'yes') return true;
  if (v === 'false' || v === '0' || v === 'no') return false;
  throw invalidField(name, `${name} must be true or false`);
}

/**
 * The model catalogue (`GET /v1/models`, spec §2.3 and §4.7), built from the provider
 * YAML files, and `GET /v1/models/:model` for one record (what OpenAI's SDK calls
 * `models.retrieve`). Public: it shows the same prices and models to everyone, as
 * OpenRouter's does, so pricing pages and tools can read it without a key.
 */
export const modelsPlugin: GatewayPlugin = {
  name: 'models',
  modalities: {},
  register(api) {
    // Read per request: a hot reload (docs/routing.md) changes the models and the groups.
    const records = (f: CatalogueFilter): ModelRecord[] => {
      const models = modelRecords(api.catalog.allRoutes(), f);
      return [...models, ...groupRecords(api.catalog.groups, models)];
    };
    api.route({
      method: 'GET', url: '/v1/models', modality: 'models', auth: false,
      handler: async (_ex, request, reply) => {
        const data = records({
          includeDeactivated: queryFlag(request, 'include_deactivated'),
          excludeDeprecated: queryFlag(request, 'exclude_deprecated'),
          now: api.now(),
        });
        void reply.header('cache-control', 'public, max-age=60');
        return { object: 'list', data };
      },
    });
    api.route({
      method: 'GET', url: '/v1/models/:model', modality: 'models', auth: false,
      handler: async (_ex, request, reply) => {
        const id = (request.params as { model: string }).model;
        const found = records({ includeDeactivated: true, excludeDeprecated: false, now: api.now() }).find((m) => m.id === id || m.aliases.includes(id));
        if (!found) throw new GatewayError('model_not_found', [id], { param: 'model' });
        void reply.header('cache-control', 'public, max-age=60');
        return found;
      },
    });
    // The same catalogue for the web console, which speaks only the management API.
    api.orgRoute({
      method: 'GET', url: '/models', role: 'member', tag: 'models',
      summary: 'The model catalogue with prices (the records of GET /v1/models, deactivated models left out).',
      handler: async () => ({ object: 'list', data: records({ includeDeactivated: false, excludeDeprecated: false, now: api.now() }) }),
    });
  },
};
