import { GatewayError, invalidField } from '../lib/errors.js';
import { applyLimitsPatch, LimitsInputError, type LimitField, type LimitsPatch } from '../limits/patch.js';
import type { Limiter, LimitScope, LimitSpec, ScopeUsage } from '../model/limits.js';
import { microsToUsd } from '../lib/money.js';
import { fieldLabel } from '../lib/field-messages.js';
import type { LimitsInput } from './api-types.js';
import { usdInput } from './usd.js';
import { input, int, maybe, obj, str, time, usd, type JsonSchema } from './schemas.js';

/*
 * `limits` in the management API (docs/limits.md, docs/management.md): the same JSON
 * object on key and project creation, in PATCH, and in every key and project view, plus
 * the `usage` of the current windows and budget period on single-resource reads.
 */

const COUNT_MAX = 1_000_000_000;
const nullableCount = (description: string, max = COUNT_MAX): JsonSchema => maybe(int(`${description}; null or absent: no limit`, { minimum: 0, maximum: max }));

/** `limits` in a request: every field optional; null removes that limit (PATCH: absent keeps it). */
export const LIMITS_INPUT: JsonSchema = { title: 'LimitsInput', ...input({
  rpm: nullableCount('Requests per sliding minute'),
  tpm: nullableCount('Tokens (input + output) per sliding minute', Number.MAX_SAFE_INTEGER),
  max_concurrent: nullableCount('Requests in flight at once'),
  budget_usd: {
    description: 'USD budget per budget_period, a JSON number or a decimal string with at most 6 decimals; null removes the budget',
    anyOf: [{ type: 'number', minimum: 0 }, { type: 'string', pattern: '^[0-9]+(\\.[0-9]{1,6})?$' }, { type: 'null' }],
  },
  budget_period: maybe(str('When the budget starts again from 0: each UTC day, each UTC calendar month, or never (total); needed with a new budget_usd', { enum: ['day', 'month', 'total'] })),
  mode: { ...maybe(str('How the limits are counted across instances: exact (one Redis call per request) or lease (each instance leases a share, within limit + one lease per instance); null: back to the rule (lease from rpm and max_concurrent of 1000 × instances), docs/limits.md')), enum: ['exact', 'lease', null] },
}) };

/** `limits` as every key and project view shows it: null where there is no limit. */
export const LIMITS = obj({
  rpm: maybe(int()), tpm: maybe(int()), max_concurrent: maybe(int()),
  budget_usd: maybe(usd('Budget per period')), budget_period: maybe(str('', { enum: ['day', 'month', 'total'] })),
  mode: { ...maybe(str('exact or lease as set; null: the rule decides (docs/limits.md, "Exact and lease mode")')), enum: ['exact', 'lease', null] },
}, { title: 'Limits', description: 'Limits of this key or project (docs/limits.md); null: none of that kind' });

export const limitsView = (l: LimitSpec) => ({
  rpm: l.rpm ?? null, tpm: l.tpm ?? null, max_concurrent: l.maxConcurrent ?? null,
  budget_usd: l.budget ? microsToUsd(l.budget.micros) : null, budget_period: l.budget?.period ?? null, mode: l.mode ?? null,
});

/** The limits after a body's change (creation: from none); a bad value is a 400 naming `limits.<field>`. */
export function limitsFromBody(body: LimitsInput | undefined, current: LimitSpec = {}): LimitSpec {
  if (!body) return current;
  const patch: LimitsPatch = { rpm: body.rpm, tpm: body.tpm, maxConcurrent: body.max_concurrent, budgetPeriod: body.budget_period, mode: body.mode };
  if (body.budget_usd === null) patch.budgetMicros = null;
  else if (body.budget_usd !== undefined) patch.budgetMicros = usdInput(body.budget_usd, 'limits.budget_usd');
  try {
    return applyLimitsPatch(current, patch);
  } catch (err) {
    if (err instanceof LimitsInputError) throw invalidField(`limits.${err.field satisfies LimitField}`, `${fieldLabel(`limits.${err.field}`)}: ${err.message}`);
    throw err;
  }
}

const WINDOW = (what: string): JsonSchema => maybe(obj({
  limit: int(), used: int(`${what} in the last 60 s (in-flight reservations included)`), remaining: int(),
  resets_at: maybe(time('When the oldest counted entry leaves the window; null when it is empty')),
}));

/** What the limits store counts now for a scope; null when it did not answer (Redis down). */
export const USAGE = maybe(obj({
  at: time('When read, by the limits store\'s clock'),
  rpm: WINDOW('Requests'),
  tpm: WINDOW('Tokens'),
  concurrency: maybe(obj({ limit: int(), used: int('Requests in flight'), remaining: int() })),
  budget: maybe(obj({
    limit_usd: usd('The budget'), period: str('', { enum: ['day', 'month', 'total'] }),
    spent_usd: usd('Settled spend this period'), held_usd: usd('Held by requests in flight (their cost bounds)'),
    remaining_usd: usd('What is left for new requests'),
    period_start: maybe(time('Start of this period (UTC); null for total')),
    resets_at: maybe(time('When the spend starts again from 0; null for total (never)')),
  })),
}, { title: 'LimitUsage', description: 'The limits\' current counts; null when the limits store does not answer' }));

const iso = (ms: number): string => new Date(ms).toISOString();

export function usageView(u: ScopeUsage | null) {
  if (!u) return null;
  const win = (w: ScopeUsage['rpm']) => (w ? { limit: w.limit, used: w.used, remaining: w.remaining, resets_at: w.resetsAt === null ? null : iso(w.resetsAt) } : null);
  const b = u.budget;
  return {
    at: iso(u.at), rpm: win(u.rpm), tpm: win(u.tpm), concurrency: u.concurrency ?? null,
    budget: b ? {
      limit_usd: microsToUsd(b.limitMicros), period: b.period, spent_usd: microsToUsd(b.spentMicros), held_usd: microsToUsd(b.heldMicros),
      remaining_usd: microsToUsd(b.remainingMicros), period_start: b.period === 'total' ? null : iso(b.periodStart),
      resets_at: b.resetsAt === null ? null : iso(b.resetsAt),
    } : null,
  };
}

/** The scope's usage, or null when the limits store does not answer (the limits themselves are still shown). */
export async function readUsage(limiter: Limiter, scope: LimitScope): Promise<ScopeUsage | null> {
  try {
    return await limiter.usage(scope);
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'limits_unavailable') return null;
    throw err;
  }
}
