import { ERRORS } from '../lib/errors.js';
import type { LogSearch } from '../store/log-query.js';
import type { ManagementDeps } from './deps.js';

/** The most terms of one kind a search expands to (each is one indexed query). */
const MAX_TERMS = 10;

/** Codes of the gateway's own limit refusals: deliberate answers, not failures (the Overview counts them apart). */
export const REFUSAL_CODES: ReadonlySet<string> = new Set(['rate_limit_exceeded', 'budget_exceeded', 'insufficient_credits']
  .filter((c) => c in ERRORS));

/**
 * A search text as indexed terms (docs/management.md, "Search"): model ids of the catalogue
 * (and aliases) containing it, plus the text itself as a model id; the org's keys whose
 * name contains it or whose prefix starts with it; error codes containing it (spaces read
 * as `_`) or whose message does (a code no entry contains is not looked for: each
 * looked-for code reads the org's error rows); and, for `req_…` of 6 characters or more, a request-id
 * prefix. Case does not matter. Words of an upstream's own error message are not searched.
 */
export async function resolveSearch(d: ManagementDeps, orgId: string, text: string): Promise<LogSearch> {
  const q = text.trim();
  const lower = q.toLowerCase();
  const models = new Set<string>([q]);
  for (const r of d.catalog.allRoutes()) {
    for (const id of [r.model.id, ...r.model.aliases]) if (id.toLowerCase().includes(lower)) models.add(id);
  }
  const keys = (await d.store.tenancy.listKeys(orgId))
    .filter((k) => (k.name !== '' && k.name.toLowerCase().includes(lower)) || k.prefix.toLowerCase().startsWith(lower))
    .map((k) => k.id);
  const asCode = lower.replace(/\s+/g, '_');
  const codes = Object.values(ERRORS)
    .filter((e) => e.code.includes(asCode) || e.message.toLowerCase().replace(/%s/g, '').includes(lower))
    .map((e) => e.code);
  return {
    models: [...models].slice(0, MAX_TERMS),
    keyIds: keys.slice(0, MAX_TERMS),
    errorCodes: codes.slice(0, 3 * MAX_TERMS),
    ...(lower.startsWith('req_') && q.length >= 6 ? { requestIdPrefix: q } : {}),
  };
}
