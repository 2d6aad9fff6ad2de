import { invalidField } from '../lib/errors.js';
import { microsToUsd } from '../lib/money.js';
import type { LogCursor, LogFilter, UsageBucket, UsageDimension } from '../store/log-query.js';
import { scopeOf } from './authn.js';
import { REFUSAL_CODES, resolveSearch } from './log-search.js';
import { byUser, emailsOf } from './usage-users.js';
import type { ApiRequests } from './api-types.js';
import type { ManagementDeps } from './deps.js';
import { found, route, type ManagementRoute } from './http.js';
import { decodeCursor, encodeCursor, input, int, maybe, num, obj, PAGE_LIMIT, params, str, time, usd, type JsonSchema } from './schemas.js';
import { LOG_DETAIL, LOG_ITEM, logDetailView, logListItemView } from './views.js';

const DAY_MS = 86_400_000;
const DEFAULT_RANGE_MS = 30 * DAY_MS;

/** The filters of a range of the log (usage, latency). */
export const RANGE_FILTERS = {
  project: str('Project id (prj_…)'), key: str('API key id (key_…)'), model: str('Model id as requested'),
  from: time('From this time (inclusive); default: 30 days before `to`'), to: time('Until this time (exclusive); default: now'),
};
/** The filters of the log's rows (list, export): a range's, the search text and the status. */
const ROW_FILTERS = {
  q: str('Search text: a model, a key\'s name or prefix, an error code or words of its message, a req_ id prefix (docs/management.md, "Search")', { minLength: 1, maxLength: 200 }),
  ...RANGE_FILTERS,
  status: str('`ok` (< 400), `error` (≥ 400) or an HTTP status', { pattern: '^(ok|error|[1-5][0-9][0-9])$' }),
};

/** `cursor`: the page's last (created_at, request id). */
const logCursor = (c: { at: number; id: string }): LogCursor => ({ createdAt: c.at, requestId: c.id });

/** A log route's filters as a client sends them (the list's; the others take some of them). */
export type FilterQuery = Pick<ApiRequests['GET /api/v1/orgs/:org/logs']['query'], keyof typeof ROW_FILTERS>;

/** A route over the log's rows (list, export): the org, the row filters and the route's own query fields. */
export const rowsQuery = (own: Record<string, JsonSchema>): { params: JsonSchema; querystring: JsonSchema } => ({ params: params('org'), querystring: input({ ...ROW_FILTERS, ...own }) });

/** The filter of a log list or export, its search text resolved to indexed terms. */
export async function searchFilterOf(d: ManagementDeps, orgId: string, q: FilterQuery): Promise<LogFilter> {
  const filter = filterOf(orgId, q, d.now(), false);
  return q.q === undefined ? filter : { ...filter, search: await resolveSearch(d, orgId, q.q) };
}

export function filterOf(orgId: string, q: FilterQuery, now: number, defaultRange: boolean): LogFilter {
  const to = q.to === undefined ? (defaultRange ? now : undefined) : Date.parse(q.to);
  const from = q.from === undefined ? (defaultRange && to !== undefined ? to - DEFAULT_RANGE_MS : undefined) : Date.parse(q.from);
  if (from !== undefined && to !== undefined && from >= to) throw invalidField('from', '"from" must be before "to"');
  const status = q.status === undefined || q.status === 'ok' || q.status === 'error' ? q.status : Number(q.status);
  return { orgId, projectId: q.project, apiKeyId: q.key, model: q.model, status, from, to };
}

const USAGE_SUMS = {
  requests: int(), errors: int('Requests answered with status 400 or above'), cost_usd: usd('Cost'),
  prompt_tokens: int(), completion_tokens: int(),
};
const TOTALS = obj({ ...USAGE_SUMS, error_rate: num('errors ÷ requests (0 when none)') }, { title: 'Totals' });
const BUCKET = obj({
  day: str('UTC day, YYYY-MM-DD'), model: maybe(str()), project_id: maybe(str()), project_name: maybe(str()),
  key_id: maybe(str()), key_prefix: maybe(str()), key_name: maybe(str()),
  user_id: maybe(str('The user who created the keys; null: keys made by the command line or the first start')), user_email: maybe(str()), ...USAGE_SUMS,
}, { title: 'Bucket', optional: ['day', 'model', 'project_id', 'project_name', 'key_id', 'key_prefix', 'key_name', 'user_id', 'user_email'] });

/** Exact integer sums of buckets, converted to USD once. */
function totals(buckets: readonly UsageBucket[]) {
  const t = buckets.reduce((a, b) => ({
    requests: a.requests + b.requests, errors: a.errors + b.errors, costMicros: a.costMicros + b.costMicros,
    promptTokens: a.promptTokens + b.promptTokens, completionTokens: a.completionTokens + b.completionTokens,
  }), { requests: 0, errors: 0, costMicros: 0, promptTokens: 0, completionTokens: 0 });
  return {
    requests: t.requests, errors: t.errors, cost_usd: microsToUsd(t.costMicros), prompt_tokens: t.promptTokens,
    completion_tokens: t.completionTokens, error_rate: t.requests === 0 ? 0 : t.errors / t.requests,
  };
}

const dayText = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Names beside ids: the org's projects and keys, read once per usage request. */
async function labels(d: ManagementDeps, orgId: string) {
  const [projects, keys] = await Promise.all([d.store.tenancy.listProjects(orgId), d.store.tenancy.listKeys(orgId)]);
  return { projects: new Map(projects.map((p) => [p.id, p.name])), keys: new Map(keys.map((k) => [k.id, k])) };
}

function bucketView(b: UsageBucket & { userId?: string | null }, l: Awaited<ReturnType<typeof labels>>, emails: ReadonlyMap<string, string>): Record<string, unknown> {
  return {
    ...(b.userId !== undefined ? { user_id: b.userId, user_email: b.userId === null ? null : emails.get(b.userId) ?? null } : {}),
    ...(b.day !== undefined ? { day: dayText(b.day) } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    ...(b.projectId !== undefined ? { project_id: b.projectId, project_name: b.projectId === null ? null : l.projects.get(b.projectId) ?? null } : {}),
    ...(b.apiKeyId !== undefined ? {
      key_id: b.apiKeyId, key_prefix: b.apiKeyId === null ? null : l.keys.get(b.apiKeyId)?.prefix ?? null,
      key_name: b.apiKeyId === null ? null : l.keys.get(b.apiKeyId)?.name ?? null,
    } : {}),
    requests: b.requests, errors: b.errors, cost_usd: microsToUsd(b.costMicros), prompt_tokens: b.promptTokens, completion_tokens: b.completionTokens,
  };
}

type GroupBy = UsageDimension | 'user';

function parseGroupBy(text: string): GroupBy[] {
  const dims = text.split(',') as GroupBy[];
  if (new Set(dims).size !== dims.length) throw invalidField('group_by', '"group_by" names a dimension twice');
  if (dims.includes('user') && dims.includes('key')) throw invalidField('group_by', '"group_by" may name key or user, not both');
  return dims;
}

/** The request log and usage of an org. */
export function logRoutes(d: ManagementDeps): ManagementRoute[] {
  return [
    route({
      method: 'GET', url: '/api/v1/orgs/:org/logs', access: 'member', tag: 'logs',
      summary: 'Request-log rows, newest first, filtered; page on with `next_cursor` (stable under new traffic: no duplicates, no gaps).',
      schema: {
        ...rowsQuery({ limit: PAGE_LIMIT(200, 50), cursor: str() }),
        response: { 200: obj({ data: { type: 'array', items: LOG_ITEM }, next_cursor: maybe(str('Pass as `cursor` for the next page; null on the last')) }) },
      },
      async handler(request) {
        const q = request.query;
        const filter = await searchFilterOf(d, scopeOf(request).org.id, q);
        const rows = await d.store.logQuery.list(filter, q.limit + 1, q.cursor === undefined ? undefined : logCursor(decodeCursor(q.cursor)));
        const page = rows.slice(0, q.limit);
        const last = page[page.length - 1];
        return { data: page.map(logListItemView), next_cursor: rows.length > q.limit && last ? encodeCursor(last.createdAt, last.requestId) : null };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/logs/:id', access: 'member', tag: 'logs', summary: 'One request by its req_… id: attempts, token details, guardrail verdicts and (where retention keeps them) the prompt and the logged bodies.',
      schema: { params: params('org', 'id'), response: { 200: LOG_DETAIL } },
      async handler(request) {
        const { org } = scopeOf(request);
        const { id } = request.params;
        const row = found(await d.store.logQuery.get(org.id, id), `request ${id} in this organization's log (rows are written within a second)`);
        return logDetailView(row, org, await d.store.bodies.get(org.id, row.requestId));
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/usage', access: 'member', tag: 'usage',
      summary: 'Requests, errors, cost and tokens grouped by day (UTC), model, project, key or user (the keys\' creator; one or two, comma-separated); the sums equal the logs exactly.',
      schema: {
        params: params('org'),
        querystring: input({ ...RANGE_FILTERS, group_by: str('', { pattern: '^(day|model|project|key|user)(,(day|model|project|key|user))?$', default: 'day' }) }),
        response: { 200: obj({ from: time(), to: time(), group_by: { type: 'array', items: str() }, totals: TOTALS, data: { type: 'array', items: BUCKET } }) },
      },
      async handler(request) {
        const { org } = scopeOf(request);
        const q = request.query;
        const filter = filterOf(org.id, q, d.now(), true);
        const groupBy = parseGroupBy(q.group_by);
        const dims = groupBy.map((g) => (g === 'user' ? 'key' : g));
        const [raw, l] = await Promise.all([d.store.logQuery.usage(filter, dims), labels(d, org.id)]);
        const buckets: Array<UsageBucket & { userId?: string | null }> = groupBy.includes('user') ? byUser(raw, l.keys) : raw;
        const emails = await emailsOf(d, buckets.map((b) => b.userId ?? null));
        buckets.sort((a, b) => (a.day ?? 0) - (b.day ?? 0) || b.costMicros - a.costMicros || b.requests - a.requests);
        return {
          from: new Date(filter.from as number).toISOString(), to: new Date(filter.to as number).toISOString(), group_by: groupBy,
          totals: totals(buckets), data: buckets.map((b) => bucketView(b, l, emails)),
        };
      },
    }),
    overviewRoute(d),
  ];
}

const TOP = (fields: Record<string, JsonSchema>) => ({ type: 'array', items: obj({ ...fields, requests: int(), cost_usd: usd('Cost') }) });

/** The console's first page in one request, from one grouped query over the last 30 UTC days. */
function overviewRoute(d: ManagementDeps): ManagementRoute {
  return route({
    method: 'GET', url: '/api/v1/orgs/:org/overview', access: 'member', tag: 'usage',
    summary: 'Balance; requests, errors and spend over the last 7 and 30 UTC days (today included); top models and projects; 30 daily points.',
    schema: {
      params: params('org'),
      response: {
        200: obj({
          balance_usd: usd('Credit balance'), last_7_days: TOTALS, last_30_days: TOTALS,
          top_models: TOP({ model: maybe(str()) }), top_projects: TOP({ project_id: maybe(str()), project_name: maybe(str()) }),
          daily: { type: 'array', items: obj({ day: str(), requests: int(), errors: int(), cost_usd: usd('Cost') }) },
          errors_30_days: obj({
            limit_refusals: int('The gateway\'s own limit refusals (rate_limit_exceeded, budget_exceeded, insufficient_credits): deliberate, not failures'),
            upstream: int('Errors of the upstream providers (upstream_… codes)'), other: int('Every other error: the request\'s own (4xx) and the gateway\'s'),
            failure_rate: num('(upstream + other) ÷ requests, the limit refusals left out (0 when none)'),
          }),
        }),
      },
    },
    async handler(request) {
      const { org } = scopeOf(request);
      const now = d.now();
      const today = Math.floor(now / DAY_MS) * DAY_MS;
      const from30 = today - 29 * DAY_MS;
      const from7 = today - 6 * DAY_MS;
      const [buckets, l, codes] = await Promise.all([
        d.store.logQuery.usage({ orgId: org.id, from: from30, to: today + DAY_MS }, ['day', 'model', 'project']),
        labels(d, org.id),
        d.store.logQuery.errorCodes({ orgId: org.id, from: from30, to: today + DAY_MS }),
      ]);
      const count = (pick: (code: string | null) => boolean): number => codes.filter((c) => pick(c.code)).reduce((n, c) => n + c.requests, 0);
      const refusals = count((c) => c !== null && REFUSAL_CODES.has(c));
      const upstream = count((c) => c?.startsWith('upstream_') === true);
      const all30 = totals(buckets);
      const top = (key: (b: UsageBucket) => string | null) => {
        const by = new Map<string | null, { requests: number; costMicros: number }>();
        for (const b of buckets) {
          const e = by.get(key(b)) ?? { requests: 0, costMicros: 0 };
          by.set(key(b), { requests: e.requests + b.requests, costMicros: e.costMicros + b.costMicros });
        }
        return [...by].sort((a, b) => b[1].costMicros - a[1].costMicros || b[1].requests - a[1].requests).slice(0, 5);
      };
      const daily = Array.from({ length: 30 }, (_, i) => {
        const day = from30 + i * DAY_MS;
        const t = totals(buckets.filter((b) => b.day === day));
        return { day: dayText(day), requests: t.requests, errors: t.errors, cost_usd: t.cost_usd };
      });
      return {
        balance_usd: microsToUsd(org.balanceMicros), last_7_days: totals(buckets.filter((b) => (b.day ?? 0) >= from7)), last_30_days: totals(buckets),
        top_models: top((b) => b.model ?? null).map(([model, v]) => ({ model, requests: v.requests, cost_usd: microsToUsd(v.costMicros) })),
        top_projects: top((b) => b.projectId ?? null).map(([id, v]) => ({
          project_id: id, project_name: id === null ? null : l.projects.get(id) ?? null, requests: v.requests, cost_usd: microsToUsd(v.costMicros),
        })),
        daily,
        errors_30_days: {
          limit_refusals: refusals, upstream, other: all30.errors - refusals - upstream,
          failure_rate: all30.requests === 0 ? 0 : (all30.errors - refusals) / all30.requests,
        },
      };
    },
  });
}
