import type { Verdict } from '../model/guardrails.js';
import type { Micros } from '../lib/money.js';
import { limitsOf, type LimitColumns } from './limits-store.js';
import { logIdOf } from './media.js';
import { parseCacheSetting } from '../model/cache-settings.js';
import type { ApiKeyRecord, LogRow, Org, Retention, UpstreamAttempt } from '../model/records.js';

/*
 * Rows as both drivers read them, and the mapping to the records the rest of the
 * gateway uses. Where the drivers differ in what they return (SQLite gives 0/1 and
 * JSON text, PostgreSQL booleans and parsed JSON), the row type admits both and the
 * mapper accepts either.
 */

export interface OrgRow { id: string; name: string; balance_micros: Micros; retention: Retention; created_at: number }
export interface KeyRow extends LimitColumns {
  id: string; org_id: string; project_id: string; prefix: string; hash: string; name: string; created_at: number;
  revoked_at: number | null; expires_at: number | null; allowed_models: string | null; last_used_at: number | null; created_by: string | null;
  previous_hash?: string | null; previous_expires_at?: number | string | null; cache?: unknown;
}

/**
 * An org's columns, its balance with what gateway instances hold of it in balance slices
 * (PostgreSQL; the table is empty on SQLite): the money not charged yet, wherever it sits.
 */
const STORED_BALANCE = 'o.balance_micros + COALESCE((SELECT CAST(SUM(s.amount_micros) AS BIGINT) FROM balance_slices s WHERE s.org_id = o.id), 0)';
/*
 * A balance stored past 2^53 − 1 (written before MAX_BALANCE_MICROS bounded credits, or by
 * hand) reads as 2^53 − 1 instead of failing every read of the org, and every org list,
 * with a 500 (PostgreSQL's BIGINT parser refuses what a JS number cannot hold).
 */
export const ORG_COLUMNS = `o.id, o.name, o.retention, o.created_at,
  CASE WHEN ${STORED_BALANCE} > ${Number.MAX_SAFE_INTEGER} THEN ${Number.MAX_SAFE_INTEGER} ELSE ${STORED_BALANCE} END AS balance_micros`;

/** An org record; a balance past the safe range (SQLite hands it over rounded) is shown as 2^53 − 1. */
export const toOrg = (r: OrgRow): Org => ({
  id: r.id, name: r.name, balanceMicros: Math.min(r.balance_micros, Number.MAX_SAFE_INTEGER), retention: r.retention, createdAt: r.created_at,
});
export const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id, orgId: r.org_id, projectId: r.project_id, prefix: r.prefix, hash: r.hash, name: r.name, createdAt: r.created_at,
  revokedAt: r.revoked_at, expiresAt: r.expires_at, allowedModels: r.allowed_models === null ? null : (JSON.parse(r.allowed_models) as string[]),
  lastUsedAt: r.last_used_at, createdBy: r.created_by, limits: limitsOf(r),
  previousHash: r.previous_hash ?? null, previousExpiresAt: r.previous_expires_at == null ? null : Number(r.previous_expires_at),
  cache: parseCacheSetting(r.cache),
});

/** request_logs columns in insert order, with the array type PostgreSQL's `unnest` needs for each. */
export const LOG_COLUMNS = [
  ['id', 'text'], ['request_id', 'text'], ['org_id', 'text'], ['api_key_id', 'text'], ['modality', 'text'],
  ['requested_model', 'text'], ['used_model', 'text'], ['used_provider', 'text'], ['status', 'int'], ['error_code', 'text'],
  ['cost_micros', 'bigint'], ['cost_estimated', 'boolean'], ['byok', 'boolean'], ['duration_ms', 'int'], ['ttfb_ms', 'int'],
  ['prompt', 'text'], ['attempts', 'json'], ['extra', 'json'], ['created_at', 'bigint'],
  ['project_id', 'text'], ['prompt_tokens', 'int'], ['completion_tokens', 'int'], ['deployment', 'text'],
  ['cache', 'text'], ['cache_age_ms', 'bigint'], ['cache_saved_micros', 'bigint'],
  ['guardrails', 'json'],
] as const;

/** A request_logs row as written: booleans as booleans, JSON as text. */
export interface LogDbRow {
  id: string; request_id: string; org_id: string | null; api_key_id: string | null; modality: string;
  requested_model: string | null; used_model: string | null; used_provider: string | null; status: number;
  error_code: string | null; cost_micros: Micros; cost_estimated: boolean; byok: boolean; duration_ms: number;
  ttfb_ms: number | null; prompt: string | null; attempts: string; extra: string | null; created_at: number;
  project_id: string | null; prompt_tokens: number | null; completion_tokens: number | null; deployment: string | null;
  cache: string | null; cache_age_ms: number | null; cache_saved_micros: Micros | null;
  guardrails: string | null;
}

/** A request_logs row as read back by either driver. */
export type StoredLogRow = Omit<LogDbRow, 'cost_estimated' | 'byok' | 'attempts' | 'extra' | 'guardrails'> & {
  cost_estimated: boolean | number; byok: boolean | number;
  attempts: string | UpstreamAttempt[]; extra: string | Record<string, unknown> | null;
  guardrails?: string | Verdict[] | null;
};

/** The row of a log record; its id mirrors the request id (`log_` + what follows `req_`). */
export function toLogDb(r: LogRow): LogDbRow {
  return {
    id: logIdOf(r.requestId), request_id: r.requestId, org_id: r.orgId, api_key_id: r.apiKeyId, modality: r.modality,
    requested_model: r.requestedModel, used_model: r.usedModel, used_provider: r.usedProvider, status: r.status,
    error_code: r.errorCode, cost_micros: r.costMicros, cost_estimated: r.costEstimated, byok: r.byok,
    duration_ms: Math.round(r.durationMs), ttfb_ms: r.ttfbMs === null ? null : Math.round(r.ttfbMs), prompt: r.prompt,
    attempts: JSON.stringify(r.attempts), extra: r.extra ? JSON.stringify(r.extra) : null, created_at: r.createdAt,
    project_id: r.projectId, prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, deployment: r.deployment ?? null,
    cache: r.cache ?? null, cache_age_ms: r.cacheAgeMs == null ? null : Math.round(r.cacheAgeMs), cache_saved_micros: r.cacheSavedMicros ?? null,
    guardrails: r.guardrails && r.guardrails.length > 0 ? JSON.stringify(r.guardrails) : null,
  };
}

export function fromLogDb(r: StoredLogRow): LogRow {
  return {
    requestId: r.request_id, orgId: r.org_id, projectId: r.project_id, apiKeyId: r.api_key_id, modality: r.modality, requestedModel: r.requested_model,
    usedModel: r.used_model, usedProvider: r.used_provider, deployment: r.deployment ?? null, status: r.status, errorCode: r.error_code, costMicros: r.cost_micros,
    promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens,
    // The cache columns only where the cache was on for the request (absent otherwise, as on rows from before migration 018).
    ...(r.cache == null ? {} : {
      cache: r.cache as LogRow['cache'], cacheAgeMs: r.cache_age_ms == null ? null : Number(r.cache_age_ms),
      cacheSavedMicros: r.cache_saved_micros == null ? null : Number(r.cache_saved_micros),
    }),
    costEstimated: r.cost_estimated === true || r.cost_estimated === 1, byok: r.byok === true || r.byok === 1,
    durationMs: r.duration_ms, ttfbMs: r.ttfb_ms, prompt: r.prompt,
    attempts: typeof r.attempts === 'string' ? (JSON.parse(r.attempts) as UpstreamAttempt[]) : r.attempts,
    createdAt: r.created_at,
    extra: typeof r.extra === 'string' ? (r.extra ? (JSON.parse(r.extra) as Record<string, unknown>) : null) : r.extra,
    // Only rows that ran guardrails carry their verdicts.
    ...(r.guardrails ? { guardrails: typeof r.guardrails === 'string' ? (JSON.parse(r.guardrails) as Verdict[]) : r.guardrails } : {}),
  };
}
