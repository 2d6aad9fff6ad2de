import { keyScope } from '../pipeline/admission.js';
import { isLimited } from '../limits/spec.js';
import type { Limiter, LimitScope, ScopeUsage } from '../model/limits.js';
import type { KeyListItem } from '../store/tenancy.js';
import { GatewayError } from '../lib/errors.js';
import { USAGE, usageView } from './limits-api.js';
import type { JsonSchema } from './schemas.js';
import { API_KEY, keyView } from './views.js';

/*
 * The current `usage` of API keys' limits on the key lists (all of a page's keys in one
 * read of the limits store), as the single key's read shows it, so that a client (the
 * console's Keys page) need not read each budgeted key on its own.
 */

/** A key list item: the key's view, with `usage` when it is active and has limits. */
export const KEY_LIST_ITEM: JsonSchema = {
  ...API_KEY,
  title: 'KeyListItem',
  properties: {
    ...(API_KEY.properties as object),
    usage: { ...USAGE, description: 'Present for active keys with limits: their current counts, as on GET …/keys/{key}; null when the limits store does not answer' },
  },
};

/** The scopes' usage read at once, or null when the limits store does not answer (the limits themselves are still shown). */
async function readUsages(limiter: Limiter, scopes: readonly LimitScope[]): Promise<ScopeUsage[] | null> {
  try {
    return await limiter.usageOf(scopes);
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'limits_unavailable') return null;
    throw err;
  }
}

/** The views of a list of keys, with the usage of the active ones that have limits (one limits-store read for the page). */
export async function keyListView(limiter: Limiter, keys: readonly KeyListItem[], now: number) {
  const views = keys.map((k) => keyView(k, now));
  const counted = keys.filter((k, i) => views[i]!.status === 'active' && isLimited(k));
  if (counted.length === 0) return views;
  const usages = await readUsages(limiter, counted.map(keyScope));
  const byId = new Map(counted.map((k, i) => [k.id, usageView(usages?.[i] ?? null)]));
  return views.map((v) => (byId.has(v.id) ? { ...v, usage: byId.get(v.id) ?? null } : v));
}
