import { Readable } from 'node:stream';
import type { LogCursor, LogFilter, LogListItem } from '../store/log-query.js';
import type { Percentiles } from '../store/log-stats.js';
import { scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { route, type ManagementRoute } from './http.js';
import { filterOf, RANGE_FILTERS, rowsQuery, searchFilterOf } from './routes-logs.js';
import { input, int, maybe, obj, params, str, time } from './schemas.js';
import { iso, logItemView } from './views.js';

/** Rows read per query while exporting: the most the export holds at once. */
export const EXPORT_PAGE = 1000;

/** Exact USD text of integer micro-USD: 6 decimals, no float on the way. */
function usdText(micros: number): string {
  const abs = Math.abs(micros);
  return `${micros < 0 ? '-' : ''}${Math.floor(abs / 1_000_000)}.${String(abs % 1_000_000).padStart(6, '0')}`;
}

const CSV_COLUMNS = ['id', 'created_at', 'modality', 'project_id', 'project_name', 'key_id', 'key_prefix', 'key_name', 'model', 'used_model', 'provider',
  'status', 'error_code', 'prompt_tokens', 'completion_tokens', 'cost_usd', 'cost_estimated', 'byok', 'duration_ms', 'ttfb_ms'] as const;

/** One CSV field (RFC 4180 quoting); text a spreadsheet would run as a formula starts with `'`. */
function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  let text = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvLine(r: LogListItem): string {
  const view: Record<string, unknown> = { ...logItemView(r), cost_usd: usdText(r.costMicros) };
  return `${CSV_COLUMNS.map((c) => csvField(view[c])).join(',')}\r\n`;
}

const jsonLine = (r: LogListItem): string => `${JSON.stringify({ ...logItemView(r), cost_micros: r.costMicros })}\n`;

/**
 * The matching rows, newest first, a page at a time on the list's cursor: the next page
 * is read only when the client has taken the last (the stream's backpressure), so an
 * export of any size holds one page.
 */
async function* lines(d: ManagementDeps, filter: LogFilter, format: 'csv' | 'jsonl'): AsyncGenerator<string> {
  if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\r\n`;
  let cursor: LogCursor | undefined;
  for (;;) {
    const rows = await d.store.logQuery.list(filter, EXPORT_PAGE, cursor);
    if (rows.length > 0) yield rows.map(format === 'csv' ? csvLine : jsonLine).join('');
    const last = rows[rows.length - 1];
    if (rows.length < EXPORT_PAGE || !last) return;
    cursor = { createdAt: last.createdAt, requestId: last.requestId };
  }
}

const PERCENTILES = obj({ p50: maybe(int('ms')), p95: maybe(int('ms')), count: int('Rows measured') }, { title: 'Percentiles' });
const percentilesView = (p: Percentiles) => ({ p50: p.p50, p95: p.p95, count: p.count });

/** The log as a file, and latency percentiles. */
export function logExportRoutes(d: ManagementDeps): ManagementRoute[] {
  return [
    route({
      method: 'GET', url: '/api/v1/orgs/:org/logs/export', access: 'member', tag: 'logs', summary: 'The matching request-log rows as a CSV or JSON-lines file, newest first, streamed (any size; the same filters and search as the list, no range: all).',
      schema: {
        ...rowsQuery({ format: str('', { enum: ['csv', 'jsonl'], default: 'csv' }) }),
        response: { 200: str('CSV (a header line, then one row a line, cost_usd exact to the micro-dollar) or JSON lines (the list\'s items, with cost_micros)') },
      },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const q = request.query;
        const filter = await searchFilterOf(d, org.id, q);
        const stamp = iso(d.now()).slice(0, 19).replace(/[:T]/g, '-');
        return reply
          .header('content-type', q.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
          .header('content-disposition', `attachment; filename="tollgate-logs-${org.id}-${stamp}.${q.format === 'csv' ? 'csv' : 'jsonl'}"`)
          .header('cache-control', 'no-store')
          .send(Readable.from(lines(d, filter, q.format), { objectMode: false }));
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/latency', access: 'member', tag: 'usage',
      summary: 'Latency (whole request) and time to first byte, p50 and p95, per UTC day and over the range (default: the last 30 days), to two significant digits.',
      schema: {
        params: params('org'),
        querystring: input(RANGE_FILTERS),
        response: {
          200: obj({
            from: time(), to: time(), latency: PERCENTILES, ttfb: PERCENTILES,
            sampled: { type: 'boolean', description: 'True when the range held over 50,000 rows: read from a sample of each hour (counts are the sample\'s)' },
            data: { type: 'array', items: obj({ day: str('UTC day, YYYY-MM-DD'), latency: PERCENTILES, ttfb: PERCENTILES }) },
          }),
        },
      },
      async handler(request) {
        const { org } = scopeOf(request);
        const filter = filterOf(org.id, request.query, d.now(), true);
        const s = await d.store.logQuery.latency(filter);
        return {
          from: iso(filter.from as number), to: iso(filter.to as number), latency: percentilesView(s.all.latency), ttfb: percentilesView(s.all.ttfb), sampled: s.sampled,
          data: s.days.map((x) => ({ day: iso(x.day).slice(0, 10), latency: percentilesView(x.latency), ttfb: percentilesView(x.ttfb) })),
        };
      },
    }),
  ];
}
