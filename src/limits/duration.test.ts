import { describe, expect, it } from 'vitest';
import { formatDuration, retryAfterSeconds } from './duration.js';

describe('formatDuration (OpenAI x-ratelimit-reset-* format)', () => {
  it.each([
    [0, '0s'], [-5, '0s'], [1, '1ms'], [20, '20ms'], [0.2, '1ms'], [999, '999ms'], [999.2, '1s'], [1000, '1s'],
    [8640, '8.64s'], [39_500, '39.5s'], [59_999, '59.999s'], [60_000, '1m0s'], [360_000, '6m0s'], [90_500, '1m30.5s'],
    [3_600_000, '1h0m0s'], [3_723_500, '1h2m3.5s'], [86_400_000, '24h0m0s'],
    [1001, '1.001s'], [8060, '8.06s'], [8064, '8.064s'], [8600, '8.6s'], [61_010, '1m1.01s'], [3_600_999.5, '1h0m1s'],
  ])('%s ms → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('retryAfterSeconds', () => {
  it.each([[0, 1], [1, 1], [1000, 1], [1001, 2], [39_500, 40], [21_600_000, 21_600]])('%s ms → %s s', (ms, s) => {
    expect(retryAfterSeconds(ms)).toBe(s);
  });
});
