import { describe, expect, it } from 'vitest';
import { applyLimitsPatch, LimitsInputError } from './patch.js';

const fieldOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof LimitsInputError) return err.field;
    throw err;
  }
  return undefined;
};

describe('limits changes', () => {
  const current = { rpm: 10, tpm: 1000, budget: { micros: 5_000_000, period: 'month' as const } };

  it('keeps what is left out, removes what is null, and leaves the current limits alone', () => {
    expect(applyLimitsPatch(current, { rpm: 30, tpm: null, maxConcurrent: 2 })).toEqual({ rpm: 30, maxConcurrent: 2, budget: { micros: 5_000_000, period: 'month' } });
    expect(applyLimitsPatch(current, {})).toEqual(current);
    expect(applyLimitsPatch(current, { rpm: 0 })).toMatchObject({ rpm: 0 });
    expect(current).toEqual({ rpm: 10, tpm: 1000, budget: { micros: 5_000_000, period: 'month' } });
  });

  it('sets, re-periods and removes a budget as one amount and one period', () => {
    expect(applyLimitsPatch({}, { budgetMicros: 10_000, budgetPeriod: 'day' }).budget).toEqual({ micros: 10_000, period: 'day' });
    expect(applyLimitsPatch(current, { budgetMicros: 1 }).budget).toEqual({ micros: 1, period: 'month' });
    expect(applyLimitsPatch(current, { budgetPeriod: 'total' }).budget).toEqual({ micros: 5_000_000, period: 'total' });
    expect(applyLimitsPatch(current, { budgetMicros: null }).budget).toBeUndefined();
  });

  it('refuses bad values naming the field', () => {
    expect(fieldOf(() => applyLimitsPatch({}, { rpm: -1 }))).toBe('rpm');
    expect(fieldOf(() => applyLimitsPatch({}, { tpm: 1.5 }))).toBe('tpm');
    expect(fieldOf(() => applyLimitsPatch({}, { maxConcurrent: Number.NaN }))).toBe('max_concurrent');
    expect(fieldOf(() => applyLimitsPatch({}, { budgetMicros: 10 }))).toBe('budget_period');
    expect(fieldOf(() => applyLimitsPatch({}, { budgetPeriod: 'day' }))).toBe('budget_usd');
    expect(fieldOf(() => applyLimitsPatch(current, { budgetPeriod: 'week' as never }))).toBe('budget_period');
    expect(fieldOf(() => applyLimitsPatch(current, { budgetMicros: null, budgetPeriod: 'day' }))).toBe('budget_period');
    expect(fieldOf(() => applyLimitsPatch(current, { budgetPeriod: null }))).toBe('budget_period');
    expect(fieldOf(() => applyLimitsPatch({}, { budgetMicros: -5, budgetPeriod: 'day' }))).toBe('budget_usd');
  });
});
