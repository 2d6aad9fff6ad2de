import type { AdmitRequest, LimitScope, LimitSpec, Metered } from '../model/limits.js';

const PERIODS = new Set(['day', 'month', 'total']);

function count(value: unknown, field: string): void {
  if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= 0)) {
    throw new RangeError(`${field} must be a whole number of at least 0, got ${JSON.stringify(value)}`);
  }
}

/**
 * Refuses limits that are not whole non-negative numbers or a budget without a known
 * period; the message names the field (`rpm`, `budget.period`, …), so the CLI and the
 * management API can turn it into their 400 / usage error as it is.
 */
export function validateLimitSpec(spec: LimitSpec): void {
  count(spec.rpm, 'rpm');
  count(spec.tpm, 'tpm');
  count(spec.maxConcurrent, 'maxConcurrent');
  if (spec.budget !== undefined) {
    count(spec.budget.micros, 'budget.micros');
    if (!PERIODS.has(spec.budget.period)) throw new RangeError(`budget.period must be day, month or total, got ${JSON.stringify(spec.budget.period)}`);
  }
  if (spec.mode !== undefined && spec.mode !== 'exact' && spec.mode !== 'lease') throw new RangeError(`mode must be exact or lease, got ${JSON.stringify(spec.mode)}`);
}

/** True when the scope limits anything at all (a scope without limits costs nothing; a mode alone limits nothing). */
export function isLimited(scope: Pick<LimitScope, 'limits'>): boolean {
  const l = scope.limits;
  return l.rpm !== undefined || l.tpm !== undefined || l.maxConcurrent !== undefined || l.budget !== undefined;
}

/** Checks an admit's numbers and returns the scopes that limit something. */
export function limitedScopes(req: AdmitRequest): LimitScope[] {
  count(req.tokens, 'tokens');
  count(req.costMicros, 'costMicros');
  const ids = new Set<string>();
  for (const scope of req.scopes) {
    if (typeof scope.id !== 'string' || !scope.id) throw new RangeError('a limit scope needs a non-empty id');
    validateLimitSpec(scope.limits);
    if (ids.has(scope.id)) throw new RangeError(`scope ${scope.id} is given twice`);
    ids.add(scope.id);
  }
  return req.scopes.filter(isLimited);
}

export function validateMetered(m: Metered): void {
  count(m.tokens, 'tokens');
  count(m.costMicros, 'costMicros');
}
