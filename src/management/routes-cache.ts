import { microsToUsd } from '../lib/money.js';
import { scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { route, type ManagementRoute } from './http.js';
import { input, int, maybe, num, obj, params, str, usd } from './schemas.js';

const DAY_MS = 86_400_000;

const CACHE_DAY = obj({
  day: str('UTC day, YYYY-MM-DD'), project_id: maybe(str()), project_name: maybe(str()),
  hits: int(), misses: int(), bypasses: int(),
  hit_rate: num('hits / (hits + misses); 0 when there were none'),
  saved_usd: usd('Original costs of the hits less what they were charged'), charged_usd: usd('What the hits were charged'),
});

/** The console's cache view (docs/cache.md): hit rate and money saved per project and UTC day. */
export function cacheRoutes(d: ManagementDeps): ManagementRoute[] {
  return [route({
    method: 'GET', url: '/api/v1/orgs/:org/cache', access: 'member', tag: 'usage',
    summary: 'The response cache per project and UTC day over the last `days` days (today included): hits, misses, bypasses, hit rate, money saved.',
    schema: {
      params: params('org'),
      querystring: input({ days: int('Days back, 1–90 (default 30)', { minimum: 1, maximum: 90, default: 30 }) }),
      response: { 200: obj({ from: str(), to: str(), saved_usd: usd('Saved over the whole period'), data: { type: 'array', items: CACHE_DAY } }) },
    },
    async handler(request) {
      const { org } = scopeOf(request);
      const days = request.query.days;
      const today = Math.floor(d.now() / DAY_MS) * DAY_MS;
      const from = today - (days - 1) * DAY_MS;
      const to = today + DAY_MS;
      const rows = await d.store.logQuery.cacheDays(org.id, from, to);
      return {
        from: new Date(from).toISOString().slice(0, 10), to: new Date(today).toISOString().slice(0, 10),
        saved_usd: microsToUsd(rows.reduce((n, r) => n + r.savedMicros, 0)),
        data: rows.map((r) => ({
          day: new Date(r.day).toISOString().slice(0, 10), project_id: r.projectId, project_name: r.projectName,
          hits: r.hits, misses: r.misses, bypasses: r.bypasses, hit_rate: r.hits + r.misses === 0 ? 0 : r.hits / (r.hits + r.misses),
          saved_usd: microsToUsd(r.savedMicros), charged_usd: microsToUsd(r.chargedMicros),
        })),
      };
    },
  })];
}
