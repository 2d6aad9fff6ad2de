import { describe, expect, it } from 'vitest';
import { skipJsonSpace, stringEnd } from './json-text.js';

describe('skipJsonSpace', () => {
  it.each([
    ['no space', '{"a":1}', 0, 0],
    ['each of JSON\'s four spaces', ' \t\r\n{', 0, 4],
    ['from an offset', '[1, \n 2]', 3, 6],
    ['to the end', '1  ', 1, 3],
    ['not other white space (JSON.parse refuses it)', '\u00a0{', 0, 0],
  ])('%s', (_name, text, from, expected) => {
    expect(skipJsonSpace(text, from)).toBe(expected);
  });
});

describe('stringEnd', () => {
  it.each([
    ['a plain string', '"abc", 1', 1, 4],
    ['past an escaped quote', '"a\\"b"', 1, 5],
    ['at a quote after an escaped backslash', '"a\\\\"x"', 1, 4],
    ['an empty string', '""', 1, 1],
    ['unterminated', '"abc', 1, -1],
  ])('%s', (_name, text, from, expected) => {
    expect(stringEnd(text, from)).toBe(expected);
  });
});
