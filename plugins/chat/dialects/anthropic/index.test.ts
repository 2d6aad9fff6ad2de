import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../request.js';
import { CTX, chatRequest, deepFreeze, runStream } from '../../chat.testkit.js';
import { anthropicDialect, anthropicUsage, finishFromStopReason } from './index.js';

const user = (content: unknown) => ({ role: 'user', content });
const body = (req: ChatRequest): Record<string, unknown> => JSON.parse(anthropicDialect.requestBody(req, 'claude-up')) as Record<string, unknown>;

describe('anthropic dialect: request (canonical → Messages)', () => {
  it.each([
    ['a user message, no max_tokens given → none sent (the provider decides, spec §7)', { messages: [user('hi')] },
      { model: 'claude-up', messages: [{ role: 'user', content: 'hi' }] }],
    ['system and developer messages → system', { messages: [{ role: 'system', content: 'A' }, { role: 'developer', content: 'B' }, user('hi')], max_tokens: 9 },
      { system: 'A\n\nB', max_tokens: 9, messages: [{ role: 'user', content: 'hi' }] }],
    ['max_completion_tokens counts as max_tokens', { messages: [user('hi')], max_completion_tokens: 5 }, { max_tokens: 5 }],
    ['stop string → stop_sequences, sampling and user carried', { messages: [user('hi')], stop: 'END', temperature: 0.3, top_p: 0.9, user: 'u1' },
      { stop_sequences: ['END'], temperature: 0.3, top_p: 0.9, metadata: { user_id: 'u1' } }],
    ['stream flag', { messages: [user('hi')], stream: true }, { stream: true }],
    ['text and image parts → blocks (data URL → base64, else url source)', {
      messages: [user([{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }, { type: 'image_url', image_url: { url: 'https://x/y.jpg' } }])],
    }, {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }, { type: 'image', source: { type: 'url', url: 'https://x/y.jpg' } }] }],
    }],
    ['assistant turns stay assistant', { messages: [user('a'), { role: 'assistant', content: 'b' }, user('c')] },
      { messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] }],
  ])('%s', (_n, input, expected) => {
    const out = body(chatRequest(input));
    expect(out).toMatchObject(expected);
    if (!('max_tokens' in expected)) expect(out).not.toHaveProperty('max_tokens');
    expect(out).not.toHaveProperty('stream_options');
  });

  it('sends a native /v1/messages body untouched but for the model, with the client\'s version headers', () => {
    const native = deepFreeze({ model: 'claude-x', max_tokens: 5, messages: [user('hi')], tools: [{ name: 't' }], thinking: { type: 'enabled', budget_tokens: 1024 } });
    const req = deepFreeze({ ...chatRequest({ messages: [user('hi')] }), native: { format: 'anthropic' as const, body: native, headers: { 'anthropic-version': '2023-06-01' } } });
    expect(body(req)).toEqual({ ...native, model: 'claude-up' });
    expect(anthropicDialect.headers?.(req)).toEqual({ 'anthropic-version': '2023-06-01' });
    expect(anthropicDialect.headers?.(chatRequest({ messages: [user('hi')] }))).toEqual({});
  });

  it.each([
    ['tools', { tools: [{ type: 'function', function: { name: 'f' } }] }, 'tools'],
    ['response_format', { response_format: { type: 'json_object' } }, 'response_format'],
    ['n > 1', { n: 2 }, 'n'],
    ['a tool message', { messages: [user('a'), { role: 'tool', tool_call_id: 'x', content: 'r' }] }, 'messages[1]'],
    ['an audio part', { messages: [user([{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }])] }, 'messages[0].content'],
  ])('refuses what it cannot translate: %s', (_n, extra, param) => {
    expect(anthropicDialect.unsupported?.(chatRequest({ messages: [user('hi')], ...extra }))).toMatchObject({ param });
  });

  it('accepts n: 1 and plain requests', () => {
    expect(anthropicDialect.unsupported?.(chatRequest({ messages: [user('hi')], n: 1 }))).toBeUndefined();
  });
});

describe('anthropic dialect: response (Messages → canonical)', () => {
  it.each([
    ['end_turn', 'stop'], ['stop_sequence', 'stop'], ['max_tokens', 'length'], ['tool_use', 'tool_calls'], ['refusal', 'content_filter'], ['something_new', 'stop'],
  ])('stop_reason %s → finish_reason %s', (reason, finish) => {
    expect(finishFromStopReason(reason)).toBe(finish);
    const msg = { id: 'msg_1', type: 'message', content: [{ type: 'text', text: 'ok' }], stop_reason: reason, usage: { input_tokens: 3, output_tokens: 1 } };
    expect(anthropicDialect.response(JSON.stringify(msg), CTX).completion).toMatchObject({ choices: [{ finish_reason: finish }] });
  });

  it('joins text blocks, skips thinking, and reports cache reads and writes apart', () => {
    const msg = {
      content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }], stop_reason: 'end_turn',
      usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 7 },
    };
    const r = anthropicDialect.response(JSON.stringify(msg), CTX);
    expect(r.usage).toEqual({ promptTokens: 130, completionTokens: 7, cachedTokens: 100, cacheWriteTokens: 20 });
    expect(r.completion).toMatchObject({
      id: 'chatcmpl-test', object: 'chat.completion', created: CTX.created, model: 'asked-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 130, completion_tokens: 7, total_tokens: 137, prompt_tokens_details: { cached_tokens: 100 } },
    });
  });

  it.each(['{"type":"error","error":{}}', 'not json'])('throws on a body that is not a message: %s', (b) => {
    expect(() => anthropicDialect.response(b, CTX)).toThrow();
  });

  it('anthropicUsage needs input_tokens', () => {
    expect(anthropicUsage({ output_tokens: 3 })).toBeUndefined();
  });
});

const ev = (type: string, rest: object = {}): [string, string] => [type, JSON.stringify({ type, ...rest })];
const delta = (text: string) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
const start = (usage: object) => ev('message_start', { message: { id: 'msg_1', content: [], usage } });

describe('anthropic dialect: stream (named events → canonical chunks)', () => {
  it.each([
    {
      name: 'a full reply: role chunk, text, finish, usage from message_start + message_delta, done at message_stop',
      events: [start({ input_tokens: 12, output_tokens: 1 }), ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }), ev('ping'),
        delta('Hello'), delta(' world'), ev('content_block_stop', { index: 0 }),
        ev('message_delta', { delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 4 } }), ev('message_stop')],
      expected: { text: 'Hello world', finish: 'length', usage: { promptTokens: 12, completionTokens: 4, cachedTokens: 0, cacheWriteTokens: 0 }, delivered: 2 + 2, done: true, error: undefined },
    },
    {
      name: 'cache counts from message_start survive a message_delta that omits them',
      events: [start({ input_tokens: 2, cache_read_input_tokens: 50, output_tokens: 1 }), delta('x'), ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }), ev('message_stop')],
      expected: { usage: { promptTokens: 52, completionTokens: 1, cachedTokens: 50, cacheWriteTokens: 0 }, done: true },
    },
    {
      name: 'thinking deltas are not part of the answer',
      events: [start({ input_tokens: 1 }), ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } }), delta('A')],
      expected: { text: 'A', delivered: 1, done: false },
    },
    {
      name: 'an error event ends the stream with its message',
      events: [start({ input_tokens: 1 }), delta('Hi'), ev('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }), delta('never')],
      expected: { text: 'Hi', error: 'Overloaded', done: false },
    },
    {
      name: 'a malformed event is an error',
      events: [['message_start', '{"type":'] as [string, string]],
      expected: { error: 'the upstream sent a malformed stream event', text: '' },
    },
  ])('$name', ({ events, expected }) => {
    expect(runStream(anthropicDialect.streamTranslator(CTX), events)).toMatchObject(expected);
  });

  it('chunks are canonical: id, created and requested model from the context', () => {
    const run = runStream(anthropicDialect.streamTranslator(CTX), [start({ input_tokens: 1 }), delta('x')]);
    expect(run.chunks[0]).toEqual({
      id: 'chatcmpl-test', object: 'chat.completion.chunk', created: CTX.created, model: 'asked-model',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    });
  });
});
