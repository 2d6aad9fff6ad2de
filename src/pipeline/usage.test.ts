import { describe, expect, it } from 'vitest';
import { InvalidUsage, MAX_REPORTED_SECONDS, MAX_REPORTED_TOKENS, reportedSeconds, reportedTokens } from './usage.js';

describe('reportedTokens', () => {
  it.each([[0, 0], [1234, 1234], [MAX_REPORTED_TOKENS, MAX_REPORTED_TOKENS], [undefined, undefined], [null, undefined]])('%j → %j', (v, expected) => {
    expect(reportedTokens(v, 'usage.prompt_tokens')).toBe(expected);
  });
  it.each([-1, -1000, 2.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_REPORTED_TOKENS + 1, 1e15, '12', true, {}])('%j is malformed, naming the field', (v) => {
    expect(() => reportedTokens(v, 'usage.prompt_tokens')).toThrow(InvalidUsage);
    expect(() => reportedTokens(v, 'usage.prompt_tokens')).toThrow(/usage\.prompt_tokens/);
  });
});

describe('reportedSeconds', () => {
  it.each([[0, 0], [9.987, 9.987], [MAX_REPORTED_SECONDS, MAX_REPORTED_SECONDS], [undefined, undefined]])('%j → %j', (v, expected) => {
    expect(reportedSeconds(v, 'duration')).toBe(expected);
  });
  it.each([-0.5, -5, Number.NaN, Number.POSITIVE_INFINITY, 1e12, '10'])('%j is malformed', (v) => {
    expect(() => reportedSeconds(v, 'duration')).toThrow(InvalidUsage);
  });
});
