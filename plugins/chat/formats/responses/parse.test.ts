import { describe, expect, it } from 'vitest';
import { deepFreeze, expectRefusal } from '../../chat.testkit.js';
import { responsesChatRequest, validateResponsesRequest, type Item } from './parse.js';

const base = { model: 'm', input: 'hi' };
const translate = (body: Record<string, unknown>, items: Item[]) => {
  const b = deepFreeze({ ...body });
  return responsesChatRequest(validateResponsesRequest(b), deepFreeze(items));
};
const fc = (call: string, name: string, args: string): Item => ({ type: 'function_call', call_id: call, name, arguments: args });

describe('Responses request → canonical chat', () => {
  it.each([
    ['instructions → a system message; a string input → a user message', { ...base, instructions: 'Be brief.' }, [{ role: 'user', content: 'hi' }],
      { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] }],
    ['input_text and input_image parts → text and image_url parts', base,
      [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'see' }, { type: 'input_image', image_url: 'data:image/png;base64,AA', detail: 'low' }] }],
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA', detail: 'low' } }] }] }],
    ['an assistant message with its function calls → one assistant message with tool_calls; outputs → tool messages', base,
      [{ role: 'user', content: 'go' }, { role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] }, fc('c1', 'w', '{"a":1}'), fc('c2', 't', '{}'),
        { type: 'function_call_output', call_id: 'c1', output: 'sunny' }, { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'noon' }] }],
      { messages: [{ role: 'user', content: 'go' },
        { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{"a":1}' } }, { id: 'c2', type: 'function', function: { name: 't', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny' }, { role: 'tool', tool_call_id: 'c2', content: 'noon' }] }],
    ['a function call with no assistant text before it → an assistant message of its own', base, [fc('c1', 'w', '{}')],
      { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }] }] }],
    ['reasoning items are context only: dropped', base, [{ type: 'reasoning', id: 'rs_1', summary: [] }, { role: 'user', content: 'hi' }], { messages: [{ role: 'user', content: 'hi' }] }],
    ['function tools, a named tool_choice, parallel_tool_calls', { ...base, tools: [{ type: 'function', name: 'w', parameters: { type: 'object' }, strict: true }], tool_choice: { type: 'function', name: 'w' }, parallel_tool_calls: false },
      [{ role: 'user', content: 'hi' }],
      { tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' }, strict: true } }], tool_choice: { type: 'function', function: { name: 'w' } }, parallel_tool_calls: false }],
    ['text.format json_schema → response_format json_schema; max_output_tokens, sampling, user, reasoning effort', {
      ...base, text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: true } }, max_output_tokens: 9, temperature: 0.2, top_p: 0.5, user: 'u', reasoning: { effort: 'low' },
    }, [{ role: 'user', content: 'hi' }], {
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' }, strict: true } }, max_tokens: 9, temperature: 0.2, top_p: 0.5, user: 'u', reasoning_effort: 'low',
    }],
  ])('%s', (_n, body, items, expected) => {
    const r = translate(body, items as Item[]);
    expect(r.body).toMatchObject(expected);
    expect(r.untranslatable).toBeUndefined();
  });

  it('keeps the native body with the resolved input, and reads stream and max tokens', () => {
    const r = translate({ ...base, stream: true, max_output_tokens: 5 }, [{ role: 'user', content: 'hi' }]);
    expect(r).toMatchObject({ stream: true, maxTokens: 5, native: { format: 'responses', body: { model: 'm', input: [{ role: 'user', content: 'hi' }] } } });
  });

  it.each([
    ['an unknown item type (OpenAI may know it)', base, [{ type: 'mystery', x: 1 }], 'input[0]'],
    ['a file part', base, [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }], 'input[0].content[0]'],
    ['an image given by file id', base, [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }], 'input[0].content[0]'],
    ['a stored prompt', { ...base, prompt: { id: 'p' } }, [], 'prompt'],
  ])('marks %s as served only natively', (_n, body, items, param) => {
    expect(translate(body, items as Item[]).untranslatable).toMatchObject({ param });
  });

  it.each([
    ['a web search', { ...base, tools: [{ type: 'web_search_preview' }] }, [], [{ param: 'tools[0]', name: 'web_search_preview', kind: 'web_search' }]],
    ['another built-in tool', { ...base, tools: [{ type: 'code_interpreter' }] }, [], [{ param: 'tools[0]', kind: 'builtin_tool' }]],
    ['a namespace', { ...base, tools: [{ type: 'namespace', name: 'ns', tools: [] }] }, [], [{ param: 'tools[0]', kind: 'namespace' }]],
    ['an additional_tools item and its namespace', base, [{ type: 'additional_tools', id: 'a', role: 'developer', tools: [{ type: 'function', name: 'f' }, { type: 'namespace', name: 'ns', tools: [] }] }, { role: 'user', content: 'hi' }],
      [{ param: 'input[0]', kind: 'additional_tools' }, { param: 'input[0].tools[1]', kind: 'namespace' }]],
  ])('leaves %s to the unsupported_params policy', (_n, body, items, expected) => {
    const r = translate(body, items as Item[]);
    expect(r.untranslatable).toBeUndefined();
    expect(r.unsupported).toEqual(expected.map((e) => expect.objectContaining(e)));
  });

  it('a call of a namespaced function goes upstream under its flat name', () => {
    const r = translate(base, [{ type: 'function_call', call_id: 'c', namespace: 'mcp__git', name: 'status', arguments: '{}' }, { type: 'function_call_output', call_id: 'c', output: 'ok' }]);
    expect(r.body.messages[0]).toMatchObject({ tool_calls: [{ function: { name: 'mcp__git__status' } }] });
  });

  it.each([
    ['not an object', [], ''],
    ['no model', { input: 'x' }, 'model'],
    ['no input and no previous response', { model: 'm' }, 'input'],
    ['input a number', { model: 'm', input: 3 }, 'input'],
    ['an item that is not an object', { model: 'm', input: ['x'] }, 'input[0]'],
    ['a message with a bad role', { model: 'm', input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    ['a text part without text', { model: 'm', input: [{ role: 'user', content: [{ type: 'input_text' }] }] }, 'input[0].content[0].text'],
    ['a function call without call_id', { model: 'm', input: [{ type: 'function_call', name: 'w', arguments: '{}' }] }, 'input[0].call_id'],
    ['an item reference without id', { model: 'm', input: [{ type: 'item_reference' }] }, 'input[0].id'],
    ['max_output_tokens 0', { ...base, max_output_tokens: 0 }, 'max_output_tokens'],
    ['stream a string', { ...base, stream: 'yes' }, 'stream'],
    ['background', { ...base, background: true }, 'background'],
    ['a conversation object', { ...base, conversation: 'conv_1' }, 'conversation'],
    ['a function tool without a name', { ...base, tools: [{ type: 'function' }] }, 'tools[0].name'],
    ['tool_choice unknown', { ...base, tool_choice: 'sometimes' }, 'tool_choice'],
    ['text.format unknown', { ...base, text: { format: { type: 'yaml' } } }, 'text.format'],
  ])('refuses %s with 400 naming the field', (_n, body, param) => {
    expectRefusal(() => validateResponsesRequest(deepFreeze(body)), param);
  });
});
