import { describe, expect, it } from 'vitest';
import { CTX, chatRequest, runStream } from '../../chat.testkit.js';
import { geminiDialect, geminiUsage } from './index.js';

const user = (content: unknown) => ({ role: 'user', content });

describe('gemini dialect: request (canonical → generateContent)', () => {
  it.each([
    ['one user message, nothing else', { messages: [user('hi')] }, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }],
    ['system/developer → systemInstruction, assistant → model', {
      messages: [{ role: 'system', content: 'A' }, { role: 'developer', content: 'B' }, user('q'), { role: 'assistant', content: 'r' }, user('q2')],
    }, {
      systemInstruction: { parts: [{ text: 'A\n\nB' }] },
      contents: [{ role: 'user', parts: [{ text: 'q' }] }, { role: 'model', parts: [{ text: 'r' }] }, { role: 'user', parts: [{ text: 'q2' }] }],
    }],
    ['generation settings', { messages: [user('hi')], max_tokens: 64, temperature: 0.1, top_p: 0.5, stop: ['X', 'Y'], seed: 7, presence_penalty: 0.2, frequency_penalty: 0.3, response_format: { type: 'json_object' } }, {
      generationConfig: { maxOutputTokens: 64, temperature: 0.1, topP: 0.5, stopSequences: ['X', 'Y'], seed: 7, presencePenalty: 0.2, frequencyPenalty: 0.3, responseMimeType: 'application/json' },
    }],
    ['text and data-URL image parts', { messages: [user([{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/' } }])] }, {
      contents: [{ role: 'user', parts: [{ text: 'see' }, { inlineData: { mimeType: 'image/jpeg', data: '/9j/' } }] }],
    }],
  ])('%s', (_n, input, expected) => {
    const out = JSON.parse(geminiDialect.requestBody(chatRequest(input), 'gemini-up')) as Record<string, unknown>;
    expect(out).toEqual({ ...{ contents: expect.anything() as unknown }, ...expected });
    expect(out).not.toHaveProperty('model');
  });

  it.each([
    [false, { model: 'gemini-up', action: 'generateContent' }, {}],
    [true, { model: 'gemini-up', action: 'streamGenerateContent' }, { alt: 'sse' }],
  ])('stream %s → path vars %j and query %j', (stream, vars, query) => {
    const req = chatRequest({ messages: [user('hi')], stream });
    expect(geminiDialect.pathVars(req, 'gemini-up')).toEqual(vars);
    expect(geminiDialect.query?.(req)).toEqual(query);
  });

  it.each([
    ['a built-in (non-function) tool', { tools: [{ type: 'function', function: { name: 'f' } }, { type: 'web_search' }] }, 'tools[1]'],
    ['legacy functions', { functions: [{ name: 'f' }] }, 'functions'],
    ['logprobs', { logprobs: true }, 'logprobs'],
    ['n > 1', { n: 3 }, 'n'],
    ['an image by URL (Gemini needs the bytes)', { messages: [user([{ type: 'image_url', image_url: { url: 'https://x/y.png' } }])] }, 'messages[0].content'],
  ])('refuses %s', (_n, extra, param) => {
    expect(geminiDialect.unsupported?.(chatRequest({ messages: [user('hi')], ...extra }))).toMatchObject({ param });
  });
});

const response = (text: string | undefined, finish?: string, usage?: object, extra: object = {}) => JSON.stringify({
  ...(text === undefined ? {} : { candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...(finish ? { finishReason: finish } : {}) }] }),
  ...(usage ? { usageMetadata: usage } : {}), modelVersion: 'gemini-up', responseId: 'r1', ...extra,
});

describe('gemini dialect: response', () => {
  it.each([
    ['STOP', 'stop'], ['MAX_TOKENS', 'length'], ['SAFETY', 'content_filter'], ['RECITATION', 'content_filter'], ['PROHIBITED_CONTENT', 'content_filter'], ['OTHER', 'stop'],
  ])('finishReason %s → %s', (reason, finish) => {
    expect(geminiDialect.response(response('x', reason), CTX).completion).toMatchObject({ choices: [{ finish_reason: finish }] });
  });

  it('bills thinking tokens as output, tool-use prompt as input, cached content apart', () => {
    const usage = { promptTokenCount: 100, cachedContentTokenCount: 60, candidatesTokenCount: 10, thoughtsTokenCount: 25, toolUsePromptTokenCount: 5 };
    const r = geminiDialect.response(response('ok', 'STOP', usage), CTX);
    expect(r.usage).toEqual({ promptTokens: 105, completionTokens: 35, cachedTokens: 60, reasoningTokens: 25 });
    expect(r.completion).toMatchObject({
      id: 'chatcmpl-test', model: 'asked-model', choices: [{ message: { role: 'assistant', content: 'ok' } }],
      usage: { prompt_tokens: 105, completion_tokens: 35, completion_tokens_details: { reasoning_tokens: 25 } },
    });
  });

  it('drops thought parts from the answer', () => {
    const body = JSON.stringify({ candidates: [{ content: { parts: [{ text: 'thinking…', thought: true }, { text: 'answer' }] }, finishReason: 'STOP' }] });
    expect(geminiDialect.response(body, CTX).completion).toMatchObject({ choices: [{ message: { content: 'answer' } }] });
  });

  it('a blocked prompt is an empty reply with finish_reason content_filter, billed for its prompt', () => {
    const r = geminiDialect.response(response(undefined, undefined, { promptTokenCount: 9, totalTokenCount: 9 }, { promptFeedback: { blockReason: 'SAFETY' } }), CTX);
    expect(r.completion).toMatchObject({ choices: [{ message: { content: '' }, finish_reason: 'content_filter' }] });
    expect(r.usage).toEqual({ promptTokens: 9, completionTokens: 0, cachedTokens: 0 });
  });

  it.each(['{}', '[1]', 'nope'])('throws on a body that is not a response: %s', (b) => {
    expect(() => geminiDialect.response(b, CTX)).toThrow();
  });

  it('geminiUsage needs promptTokenCount', () => {
    expect(geminiUsage({ candidatesTokenCount: 2 })).toBeUndefined();
  });
});

const u = (candidates: number) => ({ promptTokenCount: 11, candidatesTokenCount: candidates, totalTokenCount: 11 + candidates });

describe('gemini dialect: stream (alt=sse events → canonical chunks)', () => {
  it.each([
    {
      name: 'role chunk first, a chunk per event, finish on the last, delivered counted from the cumulative usage',
      events: [response('Hello', undefined, u(3)), response(' big', undefined, u(5)), response(' world', 'STOP', u(6))],
      expected: { text: 'Hello big world', finish: 'stop', usage: { promptTokens: 11, completionTokens: 6, cachedTokens: 0 }, delivered: 6, done: true, error: undefined },
    },
    {
      name: 'without usage, delivered text is counted at ≈4 characters a token',
      events: [response('Hello world')],
      expected: { text: 'Hello world', delivered: 3, done: false, usage: undefined },
    },
    {
      name: 'a blocked prompt ends the stream with content_filter',
      events: [response(undefined, undefined, { promptTokenCount: 4 }, { promptFeedback: { blockReason: 'SAFETY' } })],
      expected: { text: '', finish: 'content_filter', done: true },
    },
    {
      name: 'an error event mid-stream',
      events: [response('Hi', undefined, u(1)), JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })],
      expected: { text: 'Hi', error: 'The model is overloaded.', done: false },
    },
    {
      name: 'a malformed event',
      events: ['{"candidates": ['],
      expected: { error: 'the upstream sent a malformed stream event' },
    },
  ])('$name', ({ events, expected }) => {
    expect(runStream(geminiDialect.streamTranslator(CTX), events.map((d) => [undefined, d]))).toMatchObject(expected);
  });

  it('emits the role chunk once', () => {
    const run = runStream(geminiDialect.streamTranslator(CTX), [[undefined, response('a', undefined, u(1))], [undefined, response('b', 'STOP', u(2))]]);
    const roles = run.chunks.filter((c) => (c.choices as Array<{ delta: { role?: string } }>)[0]?.delta.role === 'assistant');
    expect(roles).toHaveLength(1);
    expect(run.chunks).toHaveLength(4); // role, "a", "b", finish
  });
});

const WEATHER = { type: 'function', function: { name: 'weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
const CALLS = [{ id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }, { id: 'call_b', type: 'function', function: { name: 'time', arguments: '{}' } }];

describe('gemini dialect: tools, results and JSON schemas (canonical → generateContent)', () => {
  it.each([
    ['function tools → functionDeclarations with the JSON Schema; tool_choice auto → AUTO', { tools: [WEATHER], tool_choice: 'auto' }, {
      tools: [{ functionDeclarations: [{ name: 'weather', description: 'Weather in a city', parametersJsonSchema: WEATHER.function.parameters }] }],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    }],
    ['tool_choice required → ANY, none → NONE', { tools: [WEATHER], tool_choice: 'required' }, { toolConfig: { functionCallingConfig: { mode: 'ANY' } } }],
    ['a named tool_choice → ANY limited to it', { tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'weather' } } }, {
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } },
    }],
    ['json_schema → responseMimeType and responseJsonSchema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } }, {
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: { type: 'object' } },
    }],
  ])('%s', (_n, extra, expected) => {
    const out = JSON.parse(geminiDialect.requestBody(chatRequest({ messages: [user('hi')], ...extra }), 'gemini-up')) as Record<string, unknown>;
    expect(out).toMatchObject(expected);
    expect(geminiDialect.unsupported?.(chatRequest({ messages: [user('hi')], ...extra }))).toBeUndefined();
  });

  it('parallel calls → functionCall parts in one model turn; their results → functionResponse parts (named by call id) in one user turn', () => {
    const req = chatRequest({
      tools: [WEATHER],
      messages: [user('go'), { role: 'assistant', content: null, tool_calls: CALLS },
        { role: 'tool', tool_call_id: 'call_a', content: '{"temp":21}' }, { role: 'tool', tool_call_id: 'call_b', content: 'noon' }, user('thanks')],
    });
    expect(geminiDialect.unsupported?.(req)).toBeUndefined();
    const out = JSON.parse(geminiDialect.requestBody(req, 'gemini-up')) as { contents: unknown };
    expect(out.contents).toEqual([
      { role: 'user', parts: [{ text: 'go' }] },
      { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city: 'Paris' } } }, { functionCall: { name: 'time', args: {} } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'weather', response: { temp: 21 } } }, { functionResponse: { name: 'time', response: { result: 'noon' } } }, { text: 'thanks' }] },
    ]);
  });
});

const callResponse = (calls: Array<{ name: string; args: object; id?: string }>, finish?: string, text?: string) => JSON.stringify({
  candidates: [{ content: { role: 'model', parts: [...(text ? [{ text }] : []), ...calls.map((c) => ({ functionCall: c }))] }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
  usageMetadata: u(4), modelVersion: 'gemini-up', responseId: 'r1',
});

describe('gemini dialect: tool calls in replies (generateContent → canonical)', () => {
  it('functionCall parts → tool_calls with ids (Gemini\'s own when it gives one), finish tool_calls', () => {
    const r = geminiDialect.response(callResponse([{ name: 'weather', args: { city: 'Paris' } }, { name: 'time', args: {}, id: 'g-1' }], 'STOP', 'Let me check.'), CTX);
    expect(r.completion).toMatchObject({
      choices: [{
        finish_reason: 'tool_calls',
        message: { role: 'assistant', content: 'Let me check.', tool_calls: [
          { id: 'call_test_0', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'g-1', type: 'function', function: { name: 'time', arguments: '{}' } },
        ] },
      }],
    });
  });

  it('streams each call whole as one tool-call delta, numbered across events, and ends with tool_calls', () => {
    const run = runStream(geminiDialect.streamTranslator(CTX), [
      [undefined, callResponse([{ name: 'weather', args: { city: 'Paris' } }])],
      [undefined, callResponse([{ name: 'time', args: {} }], 'STOP')],
    ]);
    expect(run.toolCalls).toEqual([
      { id: 'call_test_0', name: 'weather', arguments: '{"city":"Paris"}' },
      { id: 'call_test_1', name: 'time', arguments: '{}' },
    ]);
    expect(run).toMatchObject({ finish: 'tool_calls', done: true, text: '' });
  });
});
