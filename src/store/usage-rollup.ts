import type { LogDbRow } from './rows.js';
import type { WriteStep } from './sqlite-writer.js';

/** The columns of a log row that its usage depends on. */
type Counted = Pick<LogDbRow, 'org_id' | 'created_at' | 'project_id' | 'api_key_id' | 'requested_model' | 'status' | 'cost_micros' | 'prompt_tokens' | 'completion_tokens'>;

interface Delta { bucket: [string, number, string, string, string]; requests: number; errors: number; cost: number; prompt: number; completion: number }

const HOUR_MS = 3_600_000;

/** Adds a row's contribution to its hour's bucket. */
function count(deltas: Map<string, Delta>, r: Counted): void {
  if (r.org_id === null) return;
  const bucket: Delta['bucket'] = [r.org_id, Math.floor(r.created_at / HOUR_MS) * HOUR_MS, r.project_id ?? '', r.api_key_id ?? '', r.requested_model ?? ''];
  const key = bucket.join('\u0000');
  let d = deltas.get(key);
  if (!d) deltas.set(key, (d = { bucket, requests: 0, errors: 0, cost: 0, prompt: 0, completion: 0 }));
  d.requests += 1;
  d.errors += r.status >= 400 ? 1 : 0;
  d.cost += r.cost_micros;
  d.prompt += r.prompt_tokens ?? 0;
  d.completion += r.completion_tokens ?? 0;
}

const BUCKET_SUMS = `ON CONFLICT (org_id, hour, project_id, api_key_id, model) DO UPDATE SET
  requests = requests + excluded.requests, errors = errors + excluded.errors, cost_micros = cost_micros + excluded.cost_micros,
  prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens`;

/**
 * The hourly usage sums of a SQLite store (`usage_hourly`, migration 2), kept in the
 * log batch's transaction: one upsert per bucket a batch touches, not one per row, and
 * a row that replaces an earlier one of the same request takes that one's contribution
 * out (one statement for the batch, the ids as a JSON array). PostgreSQL keeps the same
 * table with triggers.
 */
export const USAGE_STATEMENTS = {
  usageAdd: `INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens,
    completion_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${BUCKET_SUMS}`,
  usageReplaced: `INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens,
    completion_tokens) SELECT org_id, (CAST(created_at AS INTEGER) / ${HOUR_MS}) * ${HOUR_MS}, COALESCE(project_id, ''), COALESCE(api_key_id, ''),
    COALESCE(requested_model, ''), -1, -(status >= 400), -cost_micros, -COALESCE(prompt_tokens, 0), -COALESCE(completion_tokens, 0)
    FROM request_logs WHERE org_id IS NOT NULL AND request_id IN (SELECT value FROM json_each(?)) ${BUCKET_SUMS}`,
} as const;
export type UsageStep = WriteStep<keyof typeof USAGE_STATEMENTS>;

/** The statements that count `rows` in their hours: run in the transaction that writes them, before they are written (INSERT OR REPLACE: the last of a request id wins). */
export function usageSteps(rows: readonly LogDbRow[]): UsageStep[] {
  const last = new Map(rows.map((r) => [r.request_id, r]));
  const deltas = new Map<string, Delta>();
  for (const r of last.values()) count(deltas, r);
  const steps: UsageStep[] = [['usageReplaced', [JSON.stringify([...last.keys()])]]];
  for (const d of deltas.values()) steps.push(['usageAdd', [...d.bucket, d.requests, d.errors, d.cost, d.prompt, d.completion]]);
  return steps;
}
