import type { Micros } from '../lib/money.js';
import type { SqlDb } from './sql.js';

/** One project's response cache on one UTC day: what the console's cache view shows. */
export interface CacheDay {
  /** Start of the UTC day (ms). */
  day: number;
  projectId: string | null;
  projectName: string | null;
  hits: number;
  misses: number;
  bypasses: number;
  savedMicros: Micros;
  /** What the hits were charged. */
  chargedMicros: Micros;
}

const DAY_MS = 86_400_000;

/** Hit rate and money saved per project and UTC day, from the request log's cache columns (migration 018). */
export async function cacheDays(db: SqlDb, orgId: string, from: number, to: number): Promise<CacheDay[]> {
  const rows = await db.all<{ day: number | string; project_id: string | null; project_name: string | null; hits: number | string; misses: number | string; bypasses: number | string; saved: number | string | null; charged: number | string | null }>(
    `SELECT (l.created_at / ${DAY_MS}) * ${DAY_MS} AS day, l.project_id, p.name AS project_name,
      SUM(CASE WHEN l.cache = 'hit' THEN 1 ELSE 0 END) AS hits, SUM(CASE WHEN l.cache = 'miss' THEN 1 ELSE 0 END) AS misses,
      SUM(CASE WHEN l.cache = 'bypass' THEN 1 ELSE 0 END) AS bypasses, SUM(COALESCE(l.cache_saved_micros, 0)) AS saved,
      SUM(CASE WHEN l.cache = 'hit' THEN l.cost_micros ELSE 0 END) AS charged
    FROM request_logs l LEFT JOIN projects p ON p.id = l.project_id
    WHERE l.org_id = ? AND l.created_at >= ? AND l.created_at < ? AND l.cache IS NOT NULL
    GROUP BY (l.created_at / ${DAY_MS}) * ${DAY_MS}, l.project_id, p.name ORDER BY day, l.project_id`, [orgId, from, to]);
  return rows.map((r) => ({
    day: Number(r.day), projectId: r.project_id, projectName: r.project_name, hits: Number(r.hits), misses: Number(r.misses),
    bypasses: Number(r.bypasses), savedMicros: Number(r.saved ?? 0), chargedMicros: Number(r.charged ?? 0),
  }));
}
