import { describe, expect, it } from 'vitest';
import { CTX, chatRequest, runStream } from '../../chat.testkit.js';
import { openaiDialect, openaiUsage } from './index.js';

const chunk = (delta: object, finish: string | null = null, usage: object | null = null) =>
  JSON.stringify({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [{ index: 0, delta, finish_reason: finish }], usage });

describe('openai dialect: request (pass-through)', () => {
  it.each([
    ['replaces only the model', { messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, tools: [{ type: 'function' }] }, { model: 'up-model', temperature: 0.2, tools: [{ type: 'function' }] }],
    ['forces include_usage on a stream, keeping the client\'s options', { messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { foo: 1 } }, { stream: true, stream_options: { foo: 1, include_usage: true } }],
    ['leaves a non-streamed request without stream_options', { messages: [{ role: 'user', content: 'hi' }] }, { stream_options: undefined }],
  ])('%s', (_n, body, expected) => {
    const req = chatRequest(body);
    const out = JSON.parse(openaiDialect.requestBody(req, 'up-model')) as Record<string, unknown>;
    expect(out).toMatchObject(Object.fromEntries(Object.entries(expected).filter(([, v]) => v !== undefined)));
    for (const [k, v] of Object.entries(expected)) if (v === undefined) expect(out).not.toHaveProperty(k);
    expect(out.messages).toEqual(body.messages);
  });

  it.each([
    ['max_tokens → max_completion_tokens for a model that takes it there (o-series, gpt-5)', { max_tokens: 50 }, 'max_completion_tokens', { max_completion_tokens: 50 }, ['max_tokens']],
    ['the client\'s own max_completion_tokens wins', { max_tokens: 50, max_completion_tokens: 70 }, 'max_completion_tokens', { max_completion_tokens: 70 }, ['max_tokens']],
    ['max_tokens stays for other models', { max_tokens: 50 }, 'max_tokens', { max_tokens: 50 }, []],
    ['a lone max_completion_tokens stays for other models', { max_completion_tokens: 50 }, 'max_tokens', { max_completion_tokens: 50 }, ['max_tokens']],
    // Both sent: one bound goes, the larger (the one reserved for), never the other beside it.
    ['both, larger max_completion_tokens: only max_tokens, the larger', { max_tokens: 1, max_completion_tokens: 100000 }, 'max_tokens', { max_tokens: 100000 }, ['max_completion_tokens']],
    ['both, larger max_tokens: only max_tokens, the larger', { max_tokens: 100000, max_completion_tokens: 1 }, 'max_tokens', { max_tokens: 100000 }, ['max_completion_tokens']],
    ['both, larger max_tokens, to a max_completion_tokens model: the larger under its name', { max_tokens: 100000, max_completion_tokens: 1 }, 'max_completion_tokens', { max_completion_tokens: 100000 }, ['max_tokens']],
  ] as const)('%s', (_n, extra, param, expected, absent) => {
    const out = JSON.parse(openaiDialect.requestBody(chatRequest({ messages: [{ role: 'user', content: 'hi' }], ...extra }), 'o4', { maxTokensParam: param })) as Record<string, unknown>;
    expect(out).toMatchObject(expected);
    for (const k of absent) expect(out).not.toHaveProperty(k);
  });

  it('fills {model} and needs no query', () => {
    const req = chatRequest({ messages: [{ role: 'user', content: 'hi' }] });
    expect(openaiDialect.pathVars(req, 'up-model')).toEqual({ model: 'up-model' });
    expect(openaiDialect.query).toBeUndefined();
  });
});

describe('openai dialect: response', () => {
  it.each([
    ['plain usage', { prompt_tokens: 10, completion_tokens: 5 }, { promptTokens: 10, completionTokens: 5, cachedTokens: 0 }],
    ['cached prompt tokens', { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } }, { promptTokens: 10, completionTokens: 5, cachedTokens: 4 }],
    ['reasoning tokens', { prompt_tokens: 10, completion_tokens: 50, completion_tokens_details: { reasoning_tokens: 42 } }, { promptTokens: 10, completionTokens: 50, cachedTokens: 0, reasoningTokens: 42 }],
    ['reasoning tokens (part of the completion)', { prompt_tokens: 10, completion_tokens: 5, completion_tokens_details: { reasoning_tokens: 3 } }, { promptTokens: 10, completionTokens: 5, cachedTokens: 0, reasoningTokens: 3 }],
    ['no usage', undefined, undefined],
  ])('%s', (_n, usage, expected) => {
    const body = JSON.stringify({ id: 'x', object: 'chat.completion', model: 'up-model', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }], usage });
    const r = openaiDialect.response(body, CTX);
    expect(r.usage).toEqual(expected);
    expect(r.completion).toMatchObject({ id: 'x', model: 'asked-model', choices: [{ message: { content: 'ok' } }] });
  });

  it.each(['{"broken', '{"error":{"message":"x"}}', 'null'])('throws on a body that is not a completion: %s', (body) => {
    expect(() => openaiDialect.response(body, CTX)).toThrow();
  });

  it('openaiUsage ignores a usage without prompt_tokens', () => {
    expect(openaiUsage({ completion_tokens: 3 })).toBeUndefined();
    expect(openaiUsage(null)).toBeUndefined();
  });
});

describe('openai dialect: stream', () => {
  it.each([
    {
      name: 'forwards chunks byte for byte, keeps the usage chunk apart, ends on [DONE]',
      events: [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'),
        JSON.stringify({ id: 'u', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } }), '[DONE]'],
      expected: { text: 'Hello', finish: 'stop', usage: { promptTokens: 7, completionTokens: 2, cachedTokens: 0 }, delivered: 2, done: true, error: undefined, chunks: 4 },
    },
    {
      name: 'a stream cut before [DONE] is not done',
      events: [chunk({ content: 'Hi' })],
      expected: { text: 'Hi', finish: null, usage: undefined, delivered: 1, done: false, error: undefined, chunks: 1 },
    },
    {
      name: 'an error event stops the stream with its message',
      events: [chunk({ content: 'Hi' }), JSON.stringify({ error: { message: 'overloaded' } }), chunk({ content: 'never' })],
      expected: { text: 'Hi', delivered: 1, done: false, error: 'overloaded', chunks: 1 },
    },
    {
      name: 'a malformed event is an error',
      events: ['{"choices": [', chunk({ content: 'never' })],
      expected: { text: '', delivered: 0, error: 'the upstream sent a malformed stream event', chunks: 0 },
    },
  ])('$name', ({ events, expected }) => {
    const run = runStream(openaiDialect.streamTranslator(CTX), events.map((d) => [undefined, d]));
    const { chunks, ...rest } = expected;
    expect(run).toMatchObject(rest);
    expect(run.chunks).toHaveLength(chunks);
  });

  it('passes the upstream chunk text through unchanged (no re-serialisation)', () => {
    const data = chunk({ content: 'x' });
    expect(openaiDialect.streamTranslator(CTX).onEvent(undefined, data).chunks).toEqual([data]);
  });
});
