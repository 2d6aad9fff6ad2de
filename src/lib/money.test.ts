import { describe, expect, it } from 'vitest';
import { displayUsd, formatUsd, microsToUsd, parseUsdToMicros, parseUsdToPicos, picosToMicros, picosToMicrosCeil } from './money.js';

describe('money', () => {
  it.each([
    ['0.00000015', 150_000n],
    ['0.05', 50_000_000_000n],
    ['1', 1_000_000_000_000n],
    ['0.000000000001', 1n],
  ])('parses %s USD to pico-USD', (usd, picos) => {
    expect(parseUsdToPicos(usd)).toBe(picos);
  });

  it.each(['-1', '1e-6', '0.0000000000001', 'abc', ''])('refuses %j as a price', (usd) => {
    expect(() => parseUsdToPicos(usd)).toThrow(RangeError);
  });

  it.each([
    [1_500_000n, 2], [2_500_000n, 2], [2_500_001n, 3], [999_999n, 1], [0n, 0], [499_999n, 0],
  ])('rounds %s picos half-even to %s micros', (picos, micros) => {
    expect(picosToMicros(picos)).toBe(micros);
  });

  it('keeps a cost bound past 2^53 µUSD (a price × tokens nothing can pay) a safe integer, above any balance', () => {
    const huge = 10n ** 30n;
    expect(Number.isSafeInteger(picosToMicrosCeil(huge))).toBe(true);
    expect(picosToMicrosCeil(huge)).toBe(Number.MAX_SAFE_INTEGER);
    expect(Number.isSafeInteger(picosToMicros(huge))).toBe(true);
  });

  it('rounds reservations up', () => {
    expect(picosToMicrosCeil(1n)).toBe(1);
    expect(picosToMicrosCeil(1_000_000n)).toBe(1);
    expect(picosToMicrosCeil(1_000_001n)).toBe(2);
  });

  it('parses credits and formats them back', () => {
    expect(parseUsdToMicros('10.5')).toBe(10_500_000);
    expect(formatUsd(10_500_000)).toBe('10.500000');
    expect(formatUsd(-5)).toBe('-0.000005');
    expect(microsToUsd(80_000)).toBe(0.08);
    expect(() => parseUsdToMicros('1.1234567')).toThrow(RangeError);
  });
});

describe('displayUsd: money for people, as the console writes it (issue 35)', () => {
  it.each([
    [10_000_000, '$10.00'], [0, '$0.00'], [50, '$0.00005'], [6, '$0.000006'], [10_000, '$0.01'], [1_500_000, '$1.50'],
    [1_234_567_891, '$1,234.567891'], [1_000_000_000_000_000, '$1,000,000,000.00'], [-2_500_000, '-$2.50'], [100, '$0.0001'],
  ])('%i µUSD → %s', (micros, text) => {
    expect(displayUsd(micros)).toBe(text);
  });

  it('never writes $0.00 for an amount that is not zero', () => {
    for (let micros = 1; micros < 10_000; micros += 37) expect(displayUsd(micros)).not.toBe('$0.00');
  });
});
