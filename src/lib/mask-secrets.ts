import { maskSecret } from './secrets.js';

/** Field names whose values are secrets: never written to the audit log, only their masked form. */
const SECRET_FIELD = /(^|_)(password|secret|key|token|api_key|client_secret|authorization)$/i;
/** Of those, the ones not even a masked end is kept of (a password's last letters are a hint). */
const REDACTED_FIELD = /(^|_)(password|secret|authorization)$/i;
/** Field names that look like secrets but hold ids, prefixes or masks (safe to keep). */
const NOT_SECRET = new Set(['masked', 'prefix', 'key_prefix', 'key_id', 'token_id', 'provider_key', 'target_key']);

/**
 * A copy of a before/after value with every secret masked: a field named like a secret
 * (`key`, `token`, …) keeps only `sk-…abcd` (or `…` when short), a password or secret
 * only `[redacted]`, and any string that looks like a Tollgate key or token (`tg_…`,
 * `tgm_…`) is masked wherever it appears.
 */
export function maskSecrets(value: unknown, field = ''): unknown {
  if (typeof value === 'string') {
    if (field && !NOT_SECRET.has(field) && SECRET_FIELD.test(field)) {
      if (REDACTED_FIELD.test(field)) return '[redacted]';
      return /^[^…]{0,3}…[^…]{0,4}$/.test(value) ? value : maskSecret(value); // already masked: kept
    }
    return /^(tg|tgm)_[A-Za-z0-9]{20,}/.test(value) ? maskSecret(value) : value;
  }
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, field));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, maskSecrets(v, k)]));
  }
  return value;
}

/**
 * The fields that differ between two objects (shallow; nested values compared as JSON),
 * each side keeping only those: what an audit row's before/after show.
 */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const b: Record<string, unknown> = {};
  const a: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (JSON.stringify(before[k]) === JSON.stringify(after[k])) continue;
    b[k] = before[k] ?? null;
    a[k] = after[k] ?? null;
  }
  return { before: b, after: a };
}
