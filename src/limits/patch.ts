import { formatUsd, MAX_BALANCE_MICROS } from '../lib/money.js';
import { validateLimitSpec } from './spec.js';
import type { BudgetPeriod, LimitMode, LimitSpec } from '../model/limits.js';

/** The fields of a limits change, as the CLI flags and the management API's `limits` object name them. */
export type LimitField = 'rpm' | 'tpm' | 'max_concurrent' | 'budget_usd' | 'budget_period' | 'mode';

/**
 * A change to a scope's limits: a field left out keeps its value, `null` removes that
 * limit. A budget is its amount and its period: `budgetMicros` alone keeps the current
 * period, `budgetPeriod` alone changes the period of the current budget, and a new
 * budget needs both. `budgetMicros: null` removes the budget (and its period).
 */
export interface LimitsPatch {
  rpm?: number | null;
  tpm?: number | null;
  maxConcurrent?: number | null;
  budgetMicros?: number | null;
  budgetPeriod?: BudgetPeriod | null;
  /** `exact` or `lease`; `null`: back to the rule (docs/limits.md). */
  mode?: LimitMode | null;
}

/** A change that cannot be applied; `field` names the flag or property at fault. */
export class LimitsInputError extends RangeError {
  constructor(readonly field: LimitField, message: string) {
    super(message);
  }
}

const PERIODS: readonly string[] = ['day', 'month', 'total'];

/** The limits after `patch`; `current` is left as it was. Throws LimitsInputError naming the field. */
export function applyLimitsPatch(current: LimitSpec, patch: LimitsPatch): LimitSpec {
  const next: LimitSpec = { ...current, ...(current.budget ? { budget: { ...current.budget } } : {}) };
  const count = (field: LimitField, key: 'rpm' | 'tpm' | 'maxConcurrent', value: number | null | undefined): void => {
    if (value === undefined) return;
    if (value === null) {
      delete next[key];
      return;
    }
    if (!Number.isSafeInteger(value) || value < 0) throw new LimitsInputError(field, `${field} must be a whole number of at least 0, got ${value}`);
    next[key] = value;
  };
  count('rpm', 'rpm', patch.rpm);
  count('tpm', 'tpm', patch.tpm);
  count('max_concurrent', 'maxConcurrent', patch.maxConcurrent);

  const { budgetMicros: micros, budgetPeriod: period } = patch;
  if (period !== undefined && period !== null && !PERIODS.includes(period)) {
    throw new LimitsInputError('budget_period', `budget_period must be day, month or total, got ${JSON.stringify(period)}`);
  }
  if (micros === null) {
    if (period !== undefined && period !== null) throw new LimitsInputError('budget_period', 'budget_period cannot be set while the budget is being removed');
    delete next.budget;
  } else if (micros !== undefined) {
    if (!Number.isSafeInteger(micros) || micros < 0) throw new LimitsInputError('budget_usd', 'budget_usd must be a USD amount of at least 0');
    if (micros > MAX_BALANCE_MICROS) throw new LimitsInputError('budget_usd', `budget_usd may be at most ${formatUsd(MAX_BALANCE_MICROS)} USD`);
    const p = period ?? current.budget?.period;
    if (!p) throw new LimitsInputError('budget_period', 'a budget needs its period: budget_period day, month or total');
    next.budget = { micros, period: p };
  } else if (period === null) {
    throw new LimitsInputError('budget_period', 'a budget always has a period: to remove the budget, remove budget_usd (its period goes with it)');
  } else if (period !== undefined) {
    if (!next.budget) throw new LimitsInputError('budget_usd', 'budget_period needs a budget: give budget_usd too');
    next.budget.period = period;
  }
  if (patch.mode === null) delete next.mode;
  else if (patch.mode !== undefined) {
    if (patch.mode !== 'exact' && patch.mode !== 'lease') throw new LimitsInputError('mode', `mode must be exact or lease, got ${JSON.stringify(patch.mode)}`);
    next.mode = patch.mode;
  }
  validateLimitSpec(next);
  return next;
}
