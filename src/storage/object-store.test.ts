import { describe, expect, it } from 'vitest';
import { parseRange } from './object-store.js';

describe('parseRange', () => {
  it.each([
    [undefined, 1000, undefined],
    ['bytes=0-99', 1000, { start: 0, end: 99 }],
    ['bytes=500-', 1000, { start: 500, end: 999 }],
    ['bytes=-100', 1000, { start: 900, end: 999 }],
    ['bytes=-5000', 1000, { start: 0, end: 999 }],
    ['bytes=900-5000', 1000, { start: 900, end: 999 }],
    ['bytes=999-999', 1000, { start: 999, end: 999 }],
    ['bytes=1000-', 1000, 'unsatisfiable'],
    // RFC 9110 §14.1.1: a last-pos below the first-pos makes the range-spec invalid, so the header is ignored (200).
    ['bytes=5-2', 1000, undefined],
    ['bytes=5-2', 3, undefined],
    ['bytes=-0', 1000, 'unsatisfiable'],
    ['bytes=0-1,5-6', 1000, undefined],
    ['items=0-1', 1000, undefined],
    ['bytes=-', 1000, undefined],
  ])('%s of %i bytes → %j', (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});
