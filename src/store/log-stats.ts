import type { SqlDb, SqlParam } from './sql.js';

/** p50 and p95 of a duration in ms; null when no row has one. */
export interface Percentiles { p50: number | null; p95: number | null; count: number }

/** Latency (the whole request) and time to first byte, per UTC day (ms of the day's start) and over the range. */
export interface LatencyStats {
  days: Array<{ day: number; latency: Percentiles; ttfb: Percentiles }>;
  all: { latency: Percentiles; ttfb: Percentiles };
  /** True when read from a sample of a large range (the counts are then the sample's). */
  sampled: boolean;
}

const DAY_MS = 86_400_000;

/**
 * A duration rounded down to two significant digits (0–99 ms exact, then steps of 10,
 * 100, 1,000 …): at most ~90 values a decade, so a day of a million rows groups into a
 * few hundred buckets, and a percentile read from them is within 10 % (1 % above 1 s is
 * not promised: 1,234 ms reads as 1,200). Integer arithmetic in both databases.
 */
const bucketOf = (col: string): string => `CASE WHEN ${col} < 100 THEN ${col} WHEN ${col} < 1000 THEN (${col} / 10) * 10
  WHEN ${col} < 10000 THEN (${col} / 100) * 100 WHEN ${col} < 100000 THEN (${col} / 1000) * 1000 ELSE (${col} / 10000) * 10000 END`;

type Histogram = Map<number, number>;

function percentiles(h: Histogram | undefined): Percentiles {
  if (!h || h.size === 0) return { p50: null, p95: null, count: 0 };
  const sorted = [...h].sort((a, b) => a[0] - b[0]);
  const count = sorted.reduce((n, [, c]) => n + c, 0);
  const at = (p: number): number => {
    const rank = Math.max(1, Math.ceil(p * count));
    let seen = 0;
    for (const [v, c] of sorted) {
      seen += c;
      if (seen >= rank) return v;
    }
    return (sorted[sorted.length - 1] as [number, number])[0];
  };
  return { p50: at(0.5), p95: at(0.95), count };
}

function add(into: Map<number, Histogram>, key: number, value: number, count: number): void {
  const h = into.get(key) ?? new Map<number, number>();
  h.set(value, (h.get(value) ?? 0) + count);
  into.set(key, h);
}

/** Above this many rows in the range, the percentiles are read from a sample (`sampledStats`). */
export const EXACT_LATENCY_ROWS = 50_000;
/** The sample's size, spread over the range's hours. */
const SAMPLE_ROWS = 50_000;
const HOUR_MS = 3_600_000;

/** The same rounding as `bucketOf`, in JS. */
function bucketJs(v: number): number {
  if (v < 100) return v;
  const step = v < 1000 ? 10 : v < 10_000 ? 100 : v < 100_000 ? 1000 : 10_000;
  return Math.floor(v / step) * step;
}

/**
 * Percentiles of a large range from a sample: the first rows of every hour of it (up to
 * SAMPLE_ROWS in all, the same number from each hour), each hour one index range read in
 * time order, a day's hours in one UNION ALL statement. Reading a month of a million rows
 * whole reads every row (their durations are in no index); this reads ~50,000.
 */
export async function sampledStats(db: SqlDb, where: string, params: readonly SqlParam[], from: number, to: number): Promise<LatencyStats> {
  const hours: number[] = [];
  for (let h = Math.floor(from / HOUR_MS) * HOUR_MS; h < to; h += HOUR_MS) hours.push(h);
  const perHour = Math.max(1, Math.ceil(SAMPLE_ROWS / hours.length));
  const lat = new Map<number, Histogram>();
  const ttfb = new Map<number, Histogram>();
  for (let i = 0; i < hours.length; i += 24) {
    const chunk = hours.slice(i, i + 24);
    const sql = chunk.map((_, j) => `SELECT * FROM (SELECT l.created_at AS at, l.duration_ms AS d, l.ttfb_ms AS t FROM request_logs l
      WHERE ${where} AND l.created_at >= ? AND l.created_at < ? ORDER BY l.created_at LIMIT ${perHour}) s${j}`).join(' UNION ALL ');
    const rows = await db.all<{ at: number | string; d: number | string; t: number | string | null }>(sql,
      chunk.flatMap((h) => [...params, Math.max(h, from), Math.min(h + HOUR_MS, to)]));
    for (const r of rows) {
      const day = Math.floor(Number(r.at) / DAY_MS) * DAY_MS;
      add(lat, day, bucketJs(Number(r.d)), 1);
      add(lat, -1, bucketJs(Number(r.d)), 1);
      if (r.t !== null) {
        add(ttfb, day, bucketJs(Number(r.t)), 1);
        add(ttfb, -1, bucketJs(Number(r.t)), 1);
      }
    }
  }
  const days = [...lat.keys()].filter((d) => d >= 0).sort((a, b) => a - b);
  return {
    days: days.map((d) => ({ day: d, latency: percentiles(lat.get(d)), ttfb: percentiles(ttfb.get(d)) })),
    all: { latency: percentiles(lat.get(-1)), ttfb: percentiles(ttfb.get(-1)) },
    sampled: true,
  };
}

/** Percentiles of duration_ms and ttfb_ms over the rows of `where` (on `request_logs l`), from bucket counts taken in SQL. */
export async function latencyStats(db: SqlDb, where: string, params: readonly SqlParam[]): Promise<LatencyStats> {
  const day = `(l.created_at / ${DAY_MS}) * ${DAY_MS}`;
  const [lat, ttfb] = await Promise.all([
    db.all<{ day: number | string; v: number | string; n: number | string }>(
      `SELECT ${day} AS day, ${bucketOf('l.duration_ms')} AS v, COUNT(*) AS n FROM request_logs l WHERE ${where} GROUP BY 1, 2`, [...params]),
    db.all<{ day: number | string; v: number | string; n: number | string }>(
      `SELECT ${day} AS day, ${bucketOf('l.ttfb_ms')} AS v, COUNT(*) AS n FROM request_logs l WHERE ${where} AND l.ttfb_ms IS NOT NULL GROUP BY 1, 2`, [...params]),
  ]);
  const byDay = { latency: new Map<number, Histogram>(), ttfb: new Map<number, Histogram>() };
  const all = { latency: new Map<number, Histogram>(), ttfb: new Map<number, Histogram>() };
  for (const [rows, kind] of [[lat, 'latency'], [ttfb, 'ttfb']] as const) {
    for (const r of rows) {
      add(byDay[kind], Number(r.day), Number(r.v), Number(r.n));
      add(all[kind], 0, Number(r.v), Number(r.n));
    }
  }
  const days = [...byDay.latency.keys()].sort((a, b) => a - b);
  return {
    days: days.map((d) => ({ day: d, latency: percentiles(byDay.latency.get(d)), ttfb: percentiles(byDay.ttfb.get(d)) })),
    all: { latency: percentiles(all.latency.get(0)), ttfb: percentiles(all.ttfb.get(0)) },
    sampled: false,
  };
}

/** Error rows of `where` counted by code. */
export async function errorCodeCounts(db: SqlDb, where: string, params: readonly SqlParam[]): Promise<Array<{ code: string | null; requests: number }>> {
  const rows = await db.all<{ code: string | null; n: number | string }>(`SELECT l.error_code AS code, COUNT(*) AS n FROM request_logs l WHERE ${where} GROUP BY l.error_code`, [...params]);
  return rows.map((r) => ({ code: r.code, requests: Number(r.n) }));
}
