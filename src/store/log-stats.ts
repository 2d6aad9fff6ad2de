import type { SqlDb, SqlParam } from './sql.js';

/** p50 and p95 of a duration in ms; null when no row has one. */
export interface Percentiles { p50: number | null; p95: number | null; count: number }

/** Latency (the whole request) and time to first byte, per UTC day (ms of the day's start) and over the range. */
export interface LatencyStats {
  days: Array<{ day: number; latency: Percentiles; ttfb: Percentiles }>;
  all: { latency: Percentiles; ttfb: Percentiles };
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
  };
}

/** Error rows of `where` counted by code. */
export async function errorCodeCounts(db: SqlDb, where: string, params: readonly SqlParam[]): Promise<Array<{ code: string | null; requests: number }>> {
  const rows = await db.all<{ code: string | null; n: number | string }>(`SELECT l.error_code AS code, COUNT(*) AS n FROM request_logs l WHERE ${where} GROUP BY l.error_code`, [...params]);
  return rows.map((r) => ({ code: r.code, requests: Number(r.n) }));
}
