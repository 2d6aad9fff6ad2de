import { describe, expect, it } from 'vitest';
import { periodBounds, spendCounterName } from './periods.js';

describe('periodBounds', () => {
  it.each([
    ['day', Date.UTC(2025, 0, 15, 12), Date.UTC(2025, 0, 15), Date.UTC(2025, 0, 16)],
    ['day', Date.UTC(2025, 0, 15), Date.UTC(2025, 0, 15), Date.UTC(2025, 0, 16)],
    ['day', Date.UTC(2025, 0, 15) - 1, Date.UTC(2025, 0, 14), Date.UTC(2025, 0, 15)],
    ['month', Date.UTC(2024, 1, 29, 23, 59), Date.UTC(2024, 1, 1), Date.UTC(2024, 2, 1)],
    ['month', Date.UTC(2025, 11, 31, 23, 59, 59, 999), Date.UTC(2025, 11, 1), Date.UTC(2026, 0, 1)],
    ['month', Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1), Date.UTC(2026, 1, 1)],
  ] as const)('%s of %s', (period, now, start, end) => {
    expect(periodBounds(period, now)).toEqual({ start, end });
  });

  it('gives a total budget one period from 0 that never ends', () => {
    expect(periodBounds('total', Date.UTC(2030, 5, 1))).toEqual({ start: 0, end: null });
  });

  it('names a counter by period kind too, so a day and a month starting together differ', () => {
    const start = Date.UTC(2025, 1, 1);
    expect(spendCounterName('day', start)).not.toBe(spendCounterName('month', start));
  });
});
