import { describe, expect, it } from 'vitest';
import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from './json-depth.js';

const nest = (levels: number, inner = '1'): string => '['.repeat(levels) + inner + ']'.repeat(levels);

describe('jsonNestedDeeperThan', () => {
  it.each([
    ['a flat object', '{"a":1,"b":[1,2,3]}', 2, false],
    ['exactly at the limit', nest(4), 4, false],
    ['one level over', nest(5), 4, true],
    ['objects and arrays mixed', '{"a":[{"b":[{"c":1}]}]}', 4, true],
    ['brackets inside strings do not count', '{"a":"[[[[[[{{{{{"}', 1, false],
    ['an escaped quote does not end a string', '{"a":"x\\"[[[[[["}', 1, false],
    ['an escaped backslash before a quote does end it', '[["x\\\\"]]', 1, true],
    ['brackets after a string count again', '["a", [[["b"]]]]', 3, true],
    ['siblings do not add up', '[[1],[2],[3],[4]]', 2, false],
    ['an unterminated string (JSON.parse refuses it)', '["abc', 1, false],
  ])('%s', (_name, text, max, expected) => {
    expect(jsonNestedDeeperThan(text, max)).toBe(expected);
  });

  it(`refuses 5,000 levels at the default limit (${MAX_JSON_DEPTH}) and accepts a realistic tool schema`, () => {
    expect(jsonNestedDeeperThan(nest(5000), MAX_JSON_DEPTH)).toBe(true);
    expect(jsonNestedDeeperThan(nest(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    const schema = JSON.stringify({ tools: [{ type: 'function', function: { parameters: { type: 'object', properties: { a: { type: 'array', items: { type: 'object', properties: { b: { type: 'string' } } } } } } } }] });
    expect(jsonNestedDeeperThan(schema, MAX_JSON_DEPTH)).toBe(false);
  });
});
