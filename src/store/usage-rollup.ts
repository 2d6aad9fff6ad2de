import type Database from 'better-sqlite3';
import type { LogDbRow } from './rows.js';

/** The columns of a log row that its usage depends on. */
type Counted = Pick<LogDbRow, 'org_id' | 'created_at' | 'project_id' | 'api_key_id' | 'requested_model' | 'status' | 'cost_micros' | 'prompt_tokens' | 'completion_tokens'>;

interface Delta { bucket: [string, number, string, string, string]; requests: number; errors: number; cost: number; prompt: number; completion: number }

const HOUR_MS = 3_600_000;

/** Adds (sign 1) or removes (sign -1) a row's contribution to its hour's bucket. */
function count(deltas: Map<string, Delta>, r: Counted, sign: 1 | -1): void {
  if (r.org_id === null) return;
  const bucket: Delta['bucket'] = [r.org_id, Math.floor(r.created_at / HOUR_MS) * HOUR_MS, r.project_id ?? '', r.api_key_id ?? '', r.requested_model ?? ''];
  const key = bucket.join('\u0000');
  let d = deltas.get(key);
  if (!d) deltas.set(key, (d = { bucket, requests: 0, errors: 0, cost: 0, prompt: 0, completion: 0 }));
  d.requests += sign;
  d.errors += r.status >= 400 ? sign : 0;
  d.cost += sign * r.cost_micros;
  d.prompt += sign * (r.prompt_tokens ?? 0);
  d.completion += sign * (r.completion_tokens ?? 0);
}

/**
 * The hourly usage sums of a SQLite store (`usage_hourly`, migration 2), kept by the
 * store in its log-batch transaction: one upsert per bucket a batch touches, not one
 * per row, and a row that replaces an earlier one of the same request takes that one's
 * contribution out. (PostgreSQL keeps the same table with triggers.)
 */
export class SqliteUsageRollup {
  private readonly previous;
  private readonly upsert;

  constructor(db: Database.Database) {
    // The rows a batch replaces, found in one statement (the ids as a JSON array), not one lookup per row.
    this.previous = db.prepare<[string], Counted>(`SELECT org_id, created_at, project_id, api_key_id, requested_model, status, cost_micros,
      prompt_tokens, completion_tokens FROM request_logs WHERE request_id IN (SELECT value FROM json_each(?))`);
    this.upsert = db.prepare(`INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens,
      completion_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org_id, hour, project_id, api_key_id, model) DO UPDATE SET
      requests = requests + excluded.requests, errors = errors + excluded.errors, cost_micros = cost_micros + excluded.cost_micros,
      prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens`);
  }

  /** Call inside the transaction that writes `rows`, before they are written (INSERT OR REPLACE: the last of a request id wins). */
  record(rows: readonly LogDbRow[]): void {
    const last = new Map(rows.map((r) => [r.request_id, r]));
    const deltas = new Map<string, Delta>();
    for (const before of this.previous.all(JSON.stringify([...last.keys()]))) count(deltas, before, -1);
    for (const r of last.values()) count(deltas, r, 1);
    for (const d of deltas.values()) {
      if (d.requests === 0 && d.errors === 0 && d.cost === 0 && d.prompt === 0 && d.completion === 0) continue;
      this.upsert.run(...d.bucket, d.requests, d.errors, d.cost, d.prompt, d.completion);
    }
  }
}
