import { type CacheDay, cacheDays } from './cache-stats.js';
import type { Micros } from '../lib/money.js';
import { fromLogDb, type StoredLogRow } from './rows.js';
import type { SqlDb, SqlParam } from './sql.js';
import type { LogRow } from '../model/records.js';
import { errorCodeCounts, EXACT_LATENCY_ROWS, latencyStats, sampledStats, type LatencyStats } from './log-stats.js';

export type { LatencyStats } from './log-stats.js';

/** Which rows of one org's request log: every field but `orgId` narrows. Times are ms, `from` inclusive, `to` exclusive. */
export interface LogFilter {
  orgId: string;
  projectId?: string;
  apiKeyId?: string;
  /** The model id as the client asked for it. */
  model?: string;
  /** An HTTP status, or `ok` (below 400) / `error` (400 and above). */
  status?: number | 'ok' | 'error';
  from?: number;
  to?: number;
  /** Free text, resolved to indexed terms: a row matches when any term does. */
  search?: LogSearch;
}

/**
 * What a search text matches, each term an indexed lookup (the route resolves the text:
 * catalogue models, key names, error codes, a request-id prefix). No term: no row.
 */
export interface LogSearch {
  models: readonly string[];
  keyIds: readonly string[];
  errorCodes: readonly string[];
  /** A `req_…` prefix: rows whose request id starts with it. */
  requestIdPrefix?: string;
}

/** Where a page ends: the (created_at, request_id) of its last row. The next page starts strictly after it. */
export interface LogCursor {
  createdAt: number;
  requestId: string;
}

/** A log row as lists show it: no prompt, attempts or extra; the key's prefix and the project's name. */
export type LogListItem = Omit<LogRow, 'prompt' | 'attempts' | 'extra'> & { keyPrefix: string | null; keyName: string | null; projectName: string | null };

export type UsageDimension = 'day' | 'model' | 'project' | 'key';

/** One bucket of usage: its dimension values and exact integer sums. `day` is the UTC day's start (ms). */
export interface UsageBucket {
  day?: number;
  model?: string | null;
  projectId?: string | null;
  apiKeyId?: string | null;
  requests: number;
  errors: number;
  costMicros: Micros;
  promptTokens: number;
  completionTokens: number;
}

export interface LogQueryStore {
  /** Newest first by (created_at, request_id); at most `limit` rows after `cursor`. */
  list(filter: LogFilter, limit: number, cursor?: LogCursor): Promise<LogListItem[]>;
  /** One row of the org's log, by `req_` or `log_` id; undefined for another org's. */
  get(orgId: string, id: string): Promise<(LogRow & { keyPrefix: string | null; projectName: string | null }) | undefined>;
  /** Sums of the matching rows, grouped by the dimensions (none: one bucket of everything). Sums are taken in SQL, exactly. */
  usage(filter: LogFilter, groupBy: readonly UsageDimension[]): Promise<UsageBucket[]>;
  /** The response cache's hits, misses, bypasses and savings per project and UTC day (cache-stats.ts). */
  cacheDays(orgId: string, from: number, to: number): Promise<CacheDay[]>;
  /** Latency and time-to-first-byte percentiles per UTC day and overall (log-stats.ts). */
  latency(filter: LogFilter): Promise<LatencyStats>;
  /** Error rows counted by error code (the partial index of errors: they are few). */
  errorCodes(filter: LogFilter): Promise<Array<{ code: string | null; requests: number }>>;
}

const DAY_MS = 86_400_000;

/**
 * Each dimension's SQL over the log rows (`l`) and over the hourly sums (`u`, where a
 * missing project, key or model is ''), and the bucket field it fills.
 */
const DIMENSIONS: Record<UsageDimension, { raw: string; rolled: string; field: 'day' | 'model' | 'projectId' | 'apiKeyId' }> = {
  day: { raw: `(l.created_at / ${DAY_MS}) * ${DAY_MS}`, rolled: `(u.hour / ${DAY_MS}) * ${DAY_MS}`, field: 'day' },
  model: { raw: 'l.requested_model', rolled: "NULLIF(u.model, '')", field: 'model' },
  project: { raw: 'l.project_id', rolled: "NULLIF(u.project_id, '')", field: 'projectId' },
  key: { raw: 'l.api_key_id', rolled: "NULLIF(u.api_key_id, '')", field: 'apiKeyId' },
};

const SUMS = {
  raw: ['COUNT(*) AS requests', 'CAST(SUM(CASE WHEN l.status >= 400 THEN 1 ELSE 0 END) AS BIGINT) AS errors', 'CAST(SUM(l.cost_micros) AS BIGINT) AS cost',
    'CAST(COALESCE(SUM(l.prompt_tokens), 0) AS BIGINT) AS prompt_tokens', 'CAST(COALESCE(SUM(l.completion_tokens), 0) AS BIGINT) AS completion_tokens'],
  rolled: ['CAST(SUM(u.requests) AS BIGINT) AS requests', 'CAST(SUM(u.errors) AS BIGINT) AS errors', 'CAST(SUM(u.cost_micros) AS BIGINT) AS cost',
    'CAST(SUM(u.prompt_tokens) AS BIGINT) AS prompt_tokens', 'CAST(SUM(u.completion_tokens) AS BIGINT) AS completion_tokens'],
};

const HOUR_MS = 3_600_000;

const LIST_COLUMNS = `l.request_id, l.org_id, l.project_id, l.api_key_id, l.modality, l.requested_model, l.used_model, l.used_provider, l.deployment,
  l.status, l.error_code, l.cost_micros, l.cost_estimated, l.byok, l.duration_ms, l.ttfb_ms, l.created_at, l.prompt_tokens,
  l.completion_tokens, l.cache, l.cache_age_ms, l.cache_saved_micros, k.prefix AS key_prefix, k.name AS key_name, p.name AS project_name`;

/** The columns a filter compares, in the log rows (`l`) and in the hourly sums (`u`, whose `hour` stands for the time). */
interface Columns { org: string; project: string; key: string; model: string; time: string; status: string | undefined }
const RAW: Columns = { org: 'l.org_id', project: 'l.project_id', key: 'l.api_key_id', model: 'l.requested_model', time: 'l.created_at', status: 'l.status' };
const ROLLED: Columns = { org: 'u.org_id', project: 'u.project_id', key: 'u.api_key_id', model: 'u.model', time: 'u.hour', status: undefined };

/**
 * The WHERE clause of a filter. Every condition is a plain comparison on an indexed
 * column (see migration 2), and the error filter repeats the partial index's own
 * predicate (`status >= 400`) so both databases can use it. The hourly sums have no
 * status: a status filter reads the rows (see `usage`).
 */
function where(f: LogFilter, c: Columns = RAW): { sql: string; params: SqlParam[] } {
  const parts = [`${c.org} = ?`];
  const params: SqlParam[] = [f.orgId];
  const add = (cond: string, value: SqlParam): void => {
    parts.push(cond);
    params.push(value);
  };
  if (f.projectId !== undefined) add(`${c.project} = ?`, f.projectId);
  if (f.apiKeyId !== undefined) add(`${c.key} = ?`, f.apiKeyId);
  if (f.model !== undefined) add(`${c.model} = ?`, f.model);
  if (c.status !== undefined && f.status !== undefined) {
    if (f.status === 'error') parts.push(`${c.status} >= 400`);
    else if (f.status === 'ok') parts.push(`${c.status} < 400`);
    else {
      add(`${c.status} = ?`, f.status);
      if (f.status >= 400) parts.push(`${c.status} >= 400`);
    }
  }
  if (f.from !== undefined) add(`${c.time} >= ?`, f.from);
  if (f.to !== undefined) add(`${c.time} < ?`, f.to);
  return { sql: parts.join(' AND '), params };
}

/**
 * Ids starting with `prefix`: a range of the request_id index (up to the prefix with its
 * last character incremented), then the exact test, so a collation's order cannot widen it.
 */
function prefixTerm(prefix: string): { sql: string; params: SqlParam[] } {
  const upper = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  return { sql: 'l.request_id >= ? AND l.request_id < ? AND substr(l.request_id, 1, ?) = ?', params: [prefix, upper, prefix.length, prefix] };
}

type ListRow = Omit<StoredLogRow, 'prompt' | 'attempts' | 'extra' | 'id'> & { key_prefix: string | null; key_name: string | null; project_name: string | null };

export class SqlLogQueryStore implements LogQueryStore {
  constructor(private readonly db: SqlDb) {}

  cacheDays(orgId: string, from: number, to: number): Promise<CacheDay[]> {
    return cacheDays(this.db, orgId, from, to);
  }

  /**
   * With a search, one query per term (each an index range in time order, as without
   * one), merged newest first: an OR of the terms would make either database read every
   * match to sort it.
   */
  async list(filter: LogFilter, limit: number, cursor?: LogCursor): Promise<LogListItem[]> {
    if (!filter.search) return this.page(filter, limit, cursor);
    const { search, ...base } = filter;
    const terms: Array<{ sql: string; params: SqlParam[] }> = [
      ...search.models.map((m) => ({ sql: 'l.requested_model = ?', params: [m] })),
      ...search.keyIds.map((k) => ({ sql: 'l.api_key_id = ?', params: [k] })),
      ...(search.errorCodes.length ? [{ sql: `l.status >= 400 AND l.error_code IN (${search.errorCodes.map(() => '?').join(', ')})`, params: [...search.errorCodes] }] : []),
      ...(search.requestIdPrefix ? [prefixTerm(search.requestIdPrefix)] : []),
    ];
    const pages = await Promise.all(terms.map((t) => this.page(base, limit, cursor, t)));
    const seen = new Set<string>();
    return pages.flat()
      .sort((a, b) => b.createdAt - a.createdAt || (a.requestId < b.requestId ? 1 : a.requestId > b.requestId ? -1 : 0))
      .filter((r) => !seen.has(r.requestId) && seen.add(r.requestId) !== undefined)
      .slice(0, limit);
  }

  /** Exact over up to EXACT_LATENCY_ROWS rows (counted from the hourly sums), else from a sample of every hour. */
  async latency(filter: LogFilter): Promise<LatencyStats> {
    const w = where(filter);
    const rows = (await this.usage(filter, [])).reduce((n, b) => n + b.requests, 0);
    if (rows <= EXACT_LATENCY_ROWS || filter.from === undefined || filter.to === undefined) return latencyStats(this.db, w.sql, w.params);
    return sampledStats(this.db, w.sql, w.params, filter.from, filter.to);
  }

  errorCodes(filter: LogFilter): Promise<Array<{ code: string | null; requests: number }>> {
    const w = where({ ...filter, status: 'error' });
    return errorCodeCounts(this.db, w.sql, w.params);
  }

  private async page(filter: LogFilter, limit: number, cursor?: LogCursor, term?: { sql: string; params: SqlParam[] }): Promise<LogListItem[]> {
    const base = where(filter);
    const w = term ? { sql: `${base.sql} AND ${term.sql}`, params: [...base.params, ...term.params] } : base;
    // A row-value comparison: both databases turn it into one index range, so page N costs what page 1 does.
    const after = cursor ? ' AND (l.created_at, l.request_id) < (?, ?)' : '';
    const params = cursor ? [...w.params, cursor.createdAt, cursor.requestId, limit] : [...w.params, limit];
    const rows = await this.db.all<ListRow>(`SELECT ${LIST_COLUMNS} FROM request_logs l
      LEFT JOIN api_keys k ON k.id = l.api_key_id LEFT JOIN projects p ON p.id = l.project_id
      WHERE ${w.sql}${after} ORDER BY l.created_at DESC, l.request_id DESC LIMIT ?`, params);
    return rows.map((r) => {
      const { prompt: _p, attempts: _a, extra: _e, ...row } = fromLogDb({ ...r, id: '', prompt: null, attempts: '[]', extra: null });
      return { ...row, keyPrefix: r.key_prefix, keyName: r.key_name, projectName: r.project_name };
    });
  }

  async get(orgId: string, id: string): Promise<(LogRow & { keyPrefix: string | null; projectName: string | null }) | undefined> {
    const column = id.startsWith('log_') ? 'l.id' : 'l.request_id';
    const [row] = await this.db.all<StoredLogRow & { key_prefix: string | null; project_name: string | null }>(`SELECT l.*, k.prefix AS key_prefix,
      p.name AS project_name FROM request_logs l LEFT JOIN api_keys k ON k.id = l.api_key_id LEFT JOIN projects p ON p.id = l.project_id
      WHERE ${column} = ? AND l.org_id = ?`, [id, orgId]);
    return row && { ...fromLogDb(row), keyPrefix: row.key_prefix, projectName: row.project_name };
  }

  /**
   * Whole hours of the range come from `usage_hourly` (kept by triggers in the same
   * transactions as the log rows), the partial hours at its ends from the rows
   * themselves; a status filter (not summed per hour) reads the rows. Either way the
   * sums are the rows' own, to the micro-dollar.
   */
  async usage(filter: LogFilter, groupBy: readonly UsageDimension[]): Promise<UsageBucket[]> {
    const lo = filter.from === undefined ? undefined : Math.ceil(filter.from / HOUR_MS) * HOUR_MS;
    const hi = filter.to === undefined ? undefined : Math.floor(filter.to / HOUR_MS) * HOUR_MS;
    if (filter.status !== undefined || (lo !== undefined && hi !== undefined && lo >= hi)) return this.sums(filter, groupBy, 'raw');
    const parts = [this.sums({ ...filter, from: lo, to: hi }, groupBy, 'rolled')];
    if (filter.from !== undefined && lo !== undefined && lo > filter.from) parts.push(this.sums({ ...filter, to: lo }, groupBy, 'raw'));
    if (filter.to !== undefined && hi !== undefined && hi < filter.to) parts.push(this.sums({ ...filter, from: hi }, groupBy, 'raw'));
    return merge((await Promise.all(parts)).flat(), groupBy);
  }

  private async sums(filter: LogFilter, groupBy: readonly UsageDimension[], source: 'raw' | 'rolled'): Promise<UsageBucket[]> {
    const w = where(filter, source === 'raw' ? RAW : ROLLED);
    const dims = groupBy.map((d) => DIMENSIONS[d][source]);
    const from = source === 'raw' ? 'request_logs l' : 'usage_hourly u';
    const rows = await this.db.all<Record<string, string | number | null>>(`SELECT ${[...dims.map((d, i) => `${d} AS g${i}`), ...SUMS[source]].join(', ')}
      FROM ${from} WHERE ${w.sql}${dims.length ? ` GROUP BY ${dims.map((_, i) => `g${i}`).join(', ')}` : ''}`, w.params);
    return rows.filter((r) => Number(r.requests) > 0).map((r) => {
      const bucket: UsageBucket = {
        requests: Number(r.requests), errors: Number(r.errors), costMicros: Number(r.cost ?? 0),
        promptTokens: Number(r.prompt_tokens), completionTokens: Number(r.completion_tokens),
      };
      groupBy.forEach((d, i) => {
        const v = r[`g${i}`] ?? null;
        const field = DIMENSIONS[d].field;
        if (field === 'day') bucket.day = Number(v);
        else bucket[field] = v === null ? null : String(v);
      });
      return bucket;
    });
  }
}

/** Adds up buckets of the same dimension values (the hourly part and the ends of a range). */
function merge(buckets: readonly UsageBucket[], groupBy: readonly UsageDimension[]): UsageBucket[] {
  return sumBuckets(buckets, (b) => JSON.stringify(groupBy.map((d) => b[DIMENSIONS[d].field])));
}

/** Buckets of the same key added up (exact integer sums), in the order their keys first appear. */
export function sumBuckets<B extends Omit<UsageBucket, 'day' | 'model' | 'projectId' | 'apiKeyId'>>(buckets: Iterable<B>, keyOf: (b: B) => string): B[] {
  const out = new Map<string, B>();
  for (const b of buckets) {
    const key = keyOf(b);
    const seen = out.get(key);
    if (!seen) out.set(key, { ...b });
    else {
      seen.requests += b.requests;
      seen.errors += b.errors;
      seen.costMicros += b.costMicros;
      seen.promptTokens += b.promptTokens;
      seen.completionTokens += b.completionTokens;
    }
  }
  return [...out.values()];
}
