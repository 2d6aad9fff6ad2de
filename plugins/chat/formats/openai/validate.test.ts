import { describe, expect, it } from 'vitest';
import { expectRefusal } from '../../chat.testkit.js';
import { parseChatRequest } from './validate.js';

const ok = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

describe('parseChatRequest', () => {
  it('accepts a minimal request', () => {
    const r = parseChatRequest(ok);
    expect(r).toMatchObject({ model: 'gpt-4o-mini', stream: false, includeUsage: false, maxTokens: undefined, prompt: 'hi' });
  });

  it('reads stream, include_usage and max_tokens', () => {
    const r = parseChatRequest({ ...ok, stream: true, stream_options: { include_usage: true }, max_tokens: 5 });
    expect(r).toMatchObject({ stream: true, includeUsage: true, maxTokens: 5 });
  });

  it.each([
    ['max_completion_tokens alone', { max_completion_tokens: 7 }, 7],
    ['both, max_completion_tokens larger', { max_tokens: 1, max_completion_tokens: 100000 }, 100000],
    ['both, max_tokens larger', { max_tokens: 100000, max_completion_tokens: 1 }, 100000],
    ['a null max_tokens beside max_completion_tokens', { max_tokens: null, max_completion_tokens: 9 }, 9],
  ])('bounds the output by the larger bound field the client sent: %s', (_name, bounds, expected) => {
    expect(parseChatRequest({ ...ok, ...bounds }).maxTokens).toBe(expected);
  });

  it.each([
    ['not an object', [], ''],
    ['missing model', { messages: ok.messages }, 'model'],
    ['empty model', { ...ok, model: '' }, 'model'],
    ['numeric model', { ...ok, model: 4 }, 'model'],
    ['empty messages', { ...ok, messages: [] }, 'messages'],
    ['messages not an array', { ...ok, messages: 'hi' }, 'messages'],
    ['wrong role', { ...ok, messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
    ['numeric content', { ...ok, messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
    ['missing content', { ...ok, messages: [{ role: 'user' }] }, 'messages[0].content'],
    ['bad part', { ...ok, messages: [{ role: 'user', content: [{ text: 'x' }] }] }, 'messages[0].content[0]'],
    ['max_tokens 0', { ...ok, max_tokens: 0 }, 'max_tokens'],
    ['max_tokens float', { ...ok, max_tokens: 1.5 }, 'max_tokens'],
    ['max_tokens string', { ...ok, max_tokens: '10' }, 'max_tokens'],
    ['max_completion_tokens 0 beside a valid max_tokens', { ...ok, max_tokens: 5, max_completion_tokens: 0 }, 'max_completion_tokens'],
    ['stream string', { ...ok, stream: 'yes' }, 'stream'],
  ])('refuses %s naming the field', (_name, body, param) => {
    expectRefusal(() => parseChatRequest(body), param);
  });

  it('accepts an assistant message with tool calls and no content', () => {
    expect(() => parseChatRequest({ ...ok, messages: [...ok.messages, { role: 'assistant', content: null, tool_calls: [] }] })).not.toThrow();
  });
});
