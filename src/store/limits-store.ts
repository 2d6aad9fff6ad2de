import { parseScopeId } from '../model/limit-scope.js';
import type { BudgetPeriod, LimitSpec, ScopeOwner } from '../model/limits.js';
import type { Micros } from '../lib/money.js';
import type { SqlDb } from './sql.js';

/** The limit columns api_keys and projects share (migrations 5 and 17); NULL is no limit (no mode: the rule's). */
export interface LimitColumns {
  limit_rpm?: number | null;
  limit_tpm?: number | null;
  limit_concurrent?: number | null;
  budget_micros?: number | null;
  budget_period?: string | null;
  limit_mode?: string | null;
}

/** The limits of a key or project row. A row read before migration 4 (no columns) has none. */
export function limitsOf(r: LimitColumns): LimitSpec {
  const spec: LimitSpec = {};
  if (r.limit_rpm != null) spec.rpm = Number(r.limit_rpm);
  if (r.limit_tpm != null) spec.tpm = Number(r.limit_tpm);
  if (r.limit_concurrent != null) spec.maxConcurrent = Number(r.limit_concurrent);
  if (r.budget_micros != null && r.budget_period != null) spec.budget = { micros: Number(r.budget_micros), period: r.budget_period as BudgetPeriod };
  if (r.limit_mode === 'exact' || r.limit_mode === 'lease') spec.mode = r.limit_mode;
  return spec;
}

/** Limits of keys and projects, and the spend the budgets are seeded from. */
export interface LimitsStore {
  /** Replaces the key's limits (every kind: what `spec` leaves out is cleared); false when the org has no such key. */
  setKeyLimits(orgId: string, keyId: string, spec: LimitSpec): Promise<boolean>;
  /** Replaces the project's limits; false when the org has no such project. */
  setProjectLimits(orgId: string, projectId: string, spec: LimitSpec): Promise<boolean>;
  /**
   * Micro-USD logged for a key or project (or its scope id, `key:<id>` or `project:<id>`) by requests that started
   * at or after `since` (ms), BYOK requests included: what a budget counts. Read from the
   * hourly sums of `usage_hourly`, with the request log for a `since` inside an hour.
   */
  spentSince(scope: ScopeOwner | string, since: number): Promise<Micros>;
}

/** The limit columns in the order `limitValues` gives them. */
export const LIMIT_COLUMNS = 'limit_rpm, limit_tpm, limit_concurrent, budget_micros, budget_period, limit_mode';
const HOUR_MS = 3_600_000;
const SET = 'SET limit_rpm = ?, limit_tpm = ?, limit_concurrent = ?, budget_micros = ?, budget_period = ?, limit_mode = ?';

export class SqlLimitsStore implements LimitsStore {
  constructor(private readonly db: SqlDb) {}

  async setKeyLimits(orgId: string, keyId: string, spec: LimitSpec): Promise<boolean> {
    return (await this.db.run(`UPDATE api_keys ${SET} WHERE id = ? AND org_id = ?`, [...limitValues(spec), keyId, orgId])) > 0;
  }

  async setProjectLimits(orgId: string, projectId: string, spec: LimitSpec): Promise<boolean> {
    return (await this.db.run(`UPDATE projects ${SET} WHERE id = ? AND org_id = ?`, [...limitValues(spec), projectId, orgId])) > 0;
  }

  /*
   * `usage_hourly` holds the same cost sums as the log, per org, UTC hour, project and key,
   * written in the transaction that writes the log rows (migration 3), so it agrees with
   * the log at every commit. A budget period starts on a UTC hour (midnight of a UTC day or
   * month, or 0 for `total`: src/model/periods.ts), so a seed reads whole hours only: a
   * few hundred rows for a month instead of every request. Any other `since` still sums
   * exactly: the whole hours from `usage_hourly`, the part of an hour before the first
   * whole one from the request log's (api_key_id | project_id, created_at) index (an empty
   * range when `since` is on the hour). The hours come from usage_hourly's (api_key_id |
   * project_id, hour) index (migration 8): that key's or project's rows only.
   */
  async spentSince(scope: ScopeOwner | string, since: number): Promise<Micros> {
    const { kind, id } = typeof scope === 'string' ? parseScopeId(scope) : scope;
    const column = kind === 'key' ? 'api_key_id' : 'project_id';
    const firstHour = Math.ceil(since / HOUR_MS) * HOUR_MS;
    const [row] = await this.db.all<{ hours: number | string | null; partial: number | string | null }>(`SELECT
        (SELECT SUM(cost_micros) FROM usage_hourly WHERE ${column} = ? AND hour >= ?) AS hours,
        (SELECT SUM(cost_micros) FROM request_logs WHERE ${column} = ? AND created_at >= ? AND created_at < ?) AS partial`,
    [id, firstHour, id, since, firstHour]);
    return Number(row?.hours ?? 0) + Number(row?.partial ?? 0);
  }
}

/** A spec as the six limit columns (NULL where no limit, and for the mode left to the rule). */
export function limitValues(spec: LimitSpec): Array<number | string | null> {
  return [spec.rpm ?? null, spec.tpm ?? null, spec.maxConcurrent ?? null, spec.budget?.micros ?? null, spec.budget?.period ?? null, spec.mode ?? null];
}
