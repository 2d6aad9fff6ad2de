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
    ['a built-in (non-function) tool', { tools: [{ type: 'web_search' }] }, 'tools[0]'],
    ['response_format json_object', { response_format: { type: 'json_object' } }, 'response_format'],
    ['response_format json_schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'response_format'],
    ['logprobs', { logprobs: true }, 'logprobs'],
    ['n > 1', { n: 2 }, 'n'],
    ['an audio part', { messages: [user([{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }])] }, 'messages[0].content'],
  ])('refuses what it cannot translate: %s', (_n, extra, param) => {
    expect(anthropicDialect.unsupported?.(chatRequest({ messages: [user('hi')], ...extra }))).toMatchObject({ param });
  });

  it('accepts n: 1, response_format text and plain requests', () => {
    expect(anthropicDialect.unsupported?.(chatRequest({ messages: [user('hi')], n: 1, response_format: { type: 'text' } }))).toBeUndefined();
  });
});

describe('anthropic dialect: response (Messages → canonical)', () => {
  it.each([
    ['end_turn', 'stop'], ['stop_sequence', 'stop'], ['max_tokens', 'length'], ['tool_use', 'tool_calls'], ['refusal', 'content_filter'], ['something_new', 'stop'], ['constructor', 'stop'], ['__proto__', 'stop'],
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
      name: 'thinking deltas are reasoning, not part of the answer (but delivered output, billed if the stream is cut)',
      events: [start({ input_tokens: 1 }), ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } }), delta('A')],
      expected: { text: 'A', delivered: 2, done: false },
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

const WEATHER = { type: 'function', function: { name: 'weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
const CALLS = [{ id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }, { id: 'call_b', type: 'function', function: { name: 'time', arguments: '' } }];

describe('anthropic dialect: tools (canonical → Messages)', () => {
  it.each([
    ['function tools → name, description, input_schema; no tool_choice given → none sent', { tools: [WEATHER] }, {
      tools: [{ name: 'weather', description: 'Weather in a city', input_schema: WEATHER.function.parameters }],
    }],
    ['a tool without parameters gets an empty object schema', { tools: [{ type: 'function', function: { name: 'now' } }] }, { tools: [{ name: 'now', input_schema: { type: 'object', properties: {} } }] }],
    ['tool_choice required → any', { tools: [WEATHER], tool_choice: 'required' }, { tool_choice: { type: 'any' } }],
    ['tool_choice none → none', { tools: [WEATHER], tool_choice: 'none' }, { tool_choice: { type: 'none' } }],
    ['a named tool_choice → tool', { tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'weather' } } }, { tool_choice: { type: 'tool', name: 'weather' } }],
    ['parallel_tool_calls false → disable_parallel_tool_use', { tools: [WEATHER], parallel_tool_calls: false }, { tool_choice: { type: 'auto', disable_parallel_tool_use: true } }],
  ])('%s', (_n, extra, expected) => {
    const req = chatRequest({ messages: [user('hi')], ...extra });
    expect(anthropicDialect.unsupported?.(req)).toBeUndefined();
    const out = body(req);
    expect(out).toMatchObject(expected);
    if (!('tool_choice' in expected)) expect(out).not.toHaveProperty('tool_choice');
  });

  it('assistant calls → tool_use blocks; parallel results → tool_result blocks in one user turn, with the next user words', () => {
    const out = body(chatRequest({
      tools: [WEATHER],
      messages: [user('go'), { role: 'assistant', content: 'Checking.', tool_calls: CALLS },
        { role: 'tool', tool_call_id: 'call_a', content: '{"temp":21}' }, { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'noon' }] }, user('thanks')],
    }));
    expect(out.messages).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'call_b', name: 'time', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_a', content: '{"temp":21}' }, { type: 'tool_result', tool_use_id: 'call_b', content: 'noon' }, { type: 'text', text: 'thanks' }] },
    ]);
  });
});

describe('anthropic dialect: tool_use in replies (Messages → canonical)', () => {
  it('tool_use blocks → tool_calls (input as JSON arguments), stop_reason tool_use → tool_calls', () => {
    const msg = { content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'toolu_2', name: 'time', input: {} }],
      stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 9 } };
    expect(anthropicDialect.response(JSON.stringify(msg), CTX).completion).toMatchObject({
      choices: [{ finish_reason: 'tool_calls', message: { content: 'Checking.', tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'time', arguments: '{}' } },
      ] } }],
    });
  });

  it('only tool calls → content null', () => {
    const msg = { content: [{ type: 'tool_use', id: 'toolu_1', name: 'now', input: {} }], stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 9 } };
    expect(anthropicDialect.response(JSON.stringify(msg), CTX).completion).toMatchObject({ choices: [{ message: { content: null } }] });
  });

  it('streams tool_use blocks as tool-call deltas: id and name first, then input_json_delta pieces, parallel calls numbered', () => {
    const tool = (index: number, id: string, name: string) => ev('content_block_start', { index, content_block: { type: 'tool_use', id, name, input: {} } });
    const json = (index: number, partial: string) => ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: partial } });
    const run = runStream(anthropicDialect.streamTranslator(CTX), [
      start({ input_tokens: 5, output_tokens: 1 }), ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }), delta('Checking.'),
      ev('content_block_stop', { index: 0 }), tool(1, 'toolu_1', 'weather'), json(1, '{"city":'), json(1, '"Paris"}'), ev('content_block_stop', { index: 1 }),
      tool(2, 'toolu_2', 'time'), json(2, '{}'), ev('content_block_stop', { index: 2 }),
      ev('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 20 } }), ev('message_stop'),
    ]);
    expect(run.toolCalls).toEqual([{ id: 'toolu_1', name: 'weather', arguments: '{"city":"Paris"}' }, { id: 'toolu_2', name: 'time', arguments: '{}' }]);
    expect(run).toMatchObject({ text: 'Checking.', finish: 'tool_calls', done: true });
  });
});

describe('anthropic dialect: dialect_options (the Messages API as Vertex AI hosts it)', () => {
  const vertex = { dialectOptions: { anthropic_version: 'vertex-2023-10-16', action: 'rawPredict', stream_action: 'streamRawPredict' } };

  it.each([
    ['a reply', { messages: [user('hi')], max_tokens: 5 }, 'rawPredict'],
    ['a stream', { messages: [user('hi')], max_tokens: 5, stream: true }, 'streamRawPredict'],
  ])('%s: the version in the body, no model there, the model and action in the path', (_n, input, action) => {
    const req = chatRequest(input);
    const out = JSON.parse(anthropicDialect.requestBody(req, 'claude-up@1', vertex)) as Record<string, unknown>;
    expect(out).toMatchObject({ anthropic_version: 'vertex-2023-10-16', max_tokens: 5 });
    expect(out).not.toHaveProperty('model');
    expect(anthropicDialect.pathVars(req, 'claude-up@1', vertex)).toEqual({ model: 'claude-up@1', action });
  });

  it('without options: the model in the body, no version, no action', () => {
    const req = chatRequest({ messages: [user('hi')] });
    expect(body(req)).toMatchObject({ model: 'claude-up' });
    expect(body(req)).not.toHaveProperty('anthropic_version');
    expect(anthropicDialect.pathVars(req, 'claude-up')).toEqual({ model: 'claude-up' });
  });
});
