import { scopeOf } from './authn.js';
import type { ManagementRoute } from './http.js';
import { list, params, type JsonSchema } from './schemas.js';

/** GET /api/v1/orgs/:org/<path>: everything of one kind the caller's org has, as `{ data: [view…] }`. */
export function orgListRoute<T>(path: string, tag: string, summary: string, item: JsonSchema, load: (orgId: string) => Promise<readonly T[]>, view: (row: T) => unknown): ManagementRoute {
  return {
    method: 'GET', url: `/api/v1/orgs/:org/${path}`, tag, summary,
    schema: { params: params('org'), response: { 200: list(item) } },
    async handler(request) {
      return { data: (await load(scopeOf(request).org.id)).map(view) };
    },
  };
}
