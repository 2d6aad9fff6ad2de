import { describe, expect, it } from 'vitest';
import { deepFreeze } from './chat.testkit.js';
import { argumentsObject, callNames, functionDecls, nonFunctionTool, resultObject, toolCallsOf, toolChoice, toolResultText } from './tools.js';

describe('canonical tool helpers', () => {
  it('reads function declarations and finds the first built-in tool', () => {
    const tools = deepFreeze([{ type: 'function', function: { name: 'w', description: 'd', parameters: { type: 'object' } } }, { type: 'function', function: { name: 'n' } }, { type: 'web_search' }]);
    expect(functionDecls(tools)).toEqual([{ name: 'w', description: 'd', parameters: { type: 'object' } }, { name: 'n' }]);
    expect(nonFunctionTool(tools)).toBe(2);
    expect(nonFunctionTool(tools.slice(0, 2))).toBe(-1);
    expect(functionDecls(undefined)).toEqual([]);
  });

  it.each([
    ['auto', { mode: 'auto' }], ['none', { mode: 'none' }], ['required', { mode: 'required' }],
    [{ type: 'function', function: { name: 'w' } }, { mode: 'function', name: 'w' }], ['sometimes', undefined], [undefined, undefined],
  ])('tool_choice %j → %j', (value, expected) => {
    expect(toolChoice(value)).toEqual(expected);
  });

  it('reads calls (object arguments serialised), names them by id, and parses arguments leniently', () => {
    const messages = deepFreeze([{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'w', arguments: '{"x":1}' } }, { id: 'b', function: { name: 't', arguments: { y: 2 } } }] }]);
    expect(toolCallsOf(messages[0]!)).toEqual([
      { id: 'a', type: 'function', function: { name: 'w', arguments: '{"x":1}' } }, { id: 'b', type: 'function', function: { name: 't', arguments: '{"y":2}' } },
    ]);
    expect([...callNames(messages)]).toEqual([['a', 'w'], ['b', 't']]);
    expect(argumentsObject('{"x":1}')).toEqual({ x: 1 });
    expect(argumentsObject('')).toEqual({});
    expect(argumentsObject('[1]')).toEqual({});
    expect(argumentsObject('{broken')).toEqual({});
  });

  it('tool results as text, and as the object providers want', () => {
    expect(toolResultText({ role: 'tool', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] })).toBe('a\nb');
    expect(resultObject('{"t":21}')).toEqual({ t: 21 });
    expect(resultObject('21')).toEqual({ result: 21 });
    expect(resultObject('sunny')).toEqual({ result: 'sunny' });
  });
});
