import { describe, expect, it } from 'vitest';
import { skipJsonSpace, stringEnd } from './json-text.js';

describe('reading JSON text: an index from an index', () => {
  it.each([
    [skipJsonSpace, 'no space', '{"a":1}', 0, 0],
    [skipJsonSpace, 'each of JSON\'s four spaces', ' \t\r\n{', 0, 4],
    [skipJsonSpace, 'from an offset', '[1, \n 2]', 3, 6],
    [skipJsonSpace, 'to the end', '1  ', 1, 3],
    [skipJsonSpace, 'not other white space (JSON.parse refuses it)', '\u00a0{', 0, 0],
    [stringEnd, 'a plain string', '"abc", 1', 1, 4],
    [stringEnd, 'past an escaped quote', '"a\\"b"', 1, 5],
    [stringEnd, 'at a quote after an escaped backslash', '"a\\\\"x"', 1, 4],
    [stringEnd, 'an empty string', '""', 1, 1],
    [stringEnd, 'unterminated', '"abc', 1, -1],
  ])('%o: %s', (fn, _name, text, from, expected) => {
    expect(fn(text, from)).toBe(expected);
  });
});
