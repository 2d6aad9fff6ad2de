import { inflateSync } from 'node:zlib';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_DIRECTIVES, parseDirectives } from './directives.js';
import { exampleFor, jsonReply, logprobsFor, pieces, plannedCalls } from './features.js';
import { PNG_SIGNATURE, pngBytes } from './png.js';
import { startSimulator, type Simulator } from './server.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
});
afterAll(async () => {
  await sim.close();
});

const post = async (path: string, body: unknown, headers: Record<string, string> = { authorization: 'Bearer sk-test' }) => {
  const res = await fetch(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
};
const events = (text: string) => text.split(/\r?\n\r?\n/).filter((b) => b.trim()).map((b) => {
  const lines = b.split(/\r?\n/);
  return { event: lines.find((l) => l.startsWith('event: '))?.slice(7), data: lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n') };
});
const SCHEMA = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' }, unit: { enum: ['c', 'f'] }, tags: { type: 'array', items: { type: 'string' } } } };
const EXAMPLE = { city: 'sim', days: 1, unit: 'c', tags: ['sim'] };

describe('reply features', () => {
  it('an example for a JSON Schema fills every property by type (enum first value)', () => {
    expect(exampleFor(SCHEMA)).toEqual(EXAMPLE);
    expect(exampleFor({ type: 'OBJECT', properties: { ok: { type: 'BOOLEAN' } } })).toEqual({ ok: true });
    expect(jsonReply(undefined)).toBe('{"reply":"This is a simulated reply."}');
  });

  it('plans calls to the declared tools: none when answered or choice none; tool_calls=N for parallel; the named one when chosen', () => {
    const tools = [{ name: 'a', schema: SCHEMA }, { name: 'b', schema: {} }];
    const opts = { choiceNone: false, answeredTools: false, d: NO_DIRECTIVES };
    expect(plannedCalls(tools, opts).map((c) => [c.name, c.arguments])).toEqual([['a', JSON.stringify(EXAMPLE)]]);
    expect(plannedCalls(tools, { ...opts, d: parseDirectives('[[sim:tool_calls=2]]') }).map((c) => c.name)).toEqual(['a', 'b']);
    expect(plannedCalls(tools, { ...opts, named: 'b' }).map((c) => c.name)).toEqual(['b']);
    expect(plannedCalls(tools, { ...opts, answeredTools: true })).toEqual([]);
    expect(plannedCalls(tools, { ...opts, choiceNone: true })).toEqual([]);
  });

  it('pieces and logprobs', () => {
    expect(pieces('abcdefg', 3)).toEqual(['abc', 'def', 'g']);
    expect(logprobsFor(['Hi', ' there'], 2)[1]).toMatchObject({ token: ' there', logprob: -0.02, top_logprobs: [{ token: ' there' }, { token: ' there~1' }] });
  });

  it('a real PNG: signature, IHDR size, inflatable IDAT; the colour follows the seed', () => {
    const png = pngBytes('fox', 4);
    expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    expect(png.toString('latin1', 12, 16)).toBe('IHDR');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([4, 4]);
    const idat = png.indexOf('IDAT');
    const raw = inflateSync(png.subarray(idat + 4, idat + 4 + png.readUInt32BE(idat - 4)));
    expect(raw.length).toBe(4 * (1 + 4 * 3));
    expect(pngBytes('fox', 4).equals(png)).toBe(true);
    expect(pngBytes('owl', 4).equals(png)).toBe(false);
  });
});

describe('OpenAI chat: tools, n, logprobs, JSON, reasoning models', () => {
  const tools = [{ type: 'function', function: { name: 'w', parameters: SCHEMA } }, { type: 'function', function: { name: 't', parameters: {} } }];
  it('tool calls, not streamed and streamed (id and name first, then argument pieces); answered results get text', async () => {
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${sim.url}/openai/v1` });
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', tools: tools as OpenAI.ChatCompletionTool[], messages: [{ role: 'user', content: 'go [[sim:tool_calls=2]]' }] });
    expect(r.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: null } });
    expect(r.choices[0]?.message.tool_calls?.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []))).toEqual([['w', JSON.stringify(EXAMPLE)], ['t', '{}']]);
    const stream = client.chat.completions.stream({ model: 'gpt-4o-mini', tools: tools as OpenAI.ChatCompletionTool[], messages: [{ role: 'user', content: 'go' }] });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'w', arguments: JSON.stringify(EXAMPLE) } });
    const answered = await client.chat.completions.create({ model: 'gpt-4o-mini', tools: tools as OpenAI.ChatCompletionTool[], messages: [{ role: 'user', content: 'go' }, r.choices[0]!.message, { role: 'tool', tool_call_id: 'x', content: 'ok' }] });
    expect(answered.choices[0]?.message.content).toBe('This is a simulated reply. This is a');
  });

  it('n choices and logprobs, streamed and not; JSON for a json_schema response format', async () => {
    const r = JSON.parse((await post('/openai/v1/chat/completions', { model: 'gpt-4o-mini', n: 2, logprobs: true, top_logprobs: 1, messages: [{ role: 'user', content: 'x [[sim:tokens=3]]' }] })).text);
    expect(r.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    expect(r.choices[1].logprobs.content).toHaveLength(3);
    expect(r.usage.completion_tokens).toBe(6);
    const s = events((await post('/openai/v1/chat/completions', { model: 'gpt-4o-mini', n: 2, logprobs: true, stream: true, messages: [{ role: 'user', content: 'x [[sim:tokens=2]]' }] })).text);
    const chunks = s.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data) as { choices: Array<{ index: number; logprobs: unknown; delta: { content?: string } }> });
    expect(new Set(chunks.flatMap((c) => c.choices.map((x) => x.index)))).toEqual(new Set([0, 1]));
    expect(chunks.find((c) => c.choices[0]?.delta.content)?.choices[0]?.logprobs).toMatchObject({ content: [{ token: expect.any(String) }] });
    const j = JSON.parse((await post('/openai/v1/chat/completions', { model: 'gpt-4o-mini', response_format: { type: 'json_schema', json_schema: { name: 'x', schema: SCHEMA } }, messages: [{ role: 'user', content: 'x' }] })).text);
    expect(JSON.parse(j.choices[0].message.content)).toEqual(EXAMPLE);
  });

  it('refuses max_tokens for reasoning models, as OpenAI does', async () => {
    const r = await post('/openai/v1/chat/completions', { model: 'o4-mini', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ error: { param: 'max_tokens', code: 'unsupported_parameter' } });
    expect((await post('/openai/v1/chat/completions', { model: 'o4-mini', max_completion_tokens: 5, messages: [{ role: 'user', content: 'x' }] })).status).toBe(200);
  });
});

describe('Anthropic and Gemini tools', () => {
  const anthropic = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
  it('Anthropic: tool_use blocks (streamed as input_json_delta), stop_reason tool_use; a stray tool_result is refused', async () => {
    const body = { model: 'claude-x', max_tokens: 50, tools: [{ name: 'w', input_schema: SCHEMA }], messages: [{ role: 'user', content: 'go' }] };
    const r = JSON.parse((await post('/anthropic/v1/messages', body, anthropic)).text);
    expect(r).toMatchObject({ stop_reason: 'tool_use', content: [{ type: 'tool_use', name: 'w', input: EXAMPLE }] });
    const s = events((await post('/anthropic/v1/messages', { ...body, stream: true }, anthropic)).text).map((e) => JSON.parse(e.data) as { type: string; delta?: { partial_json?: string } });
    expect(s.filter((e) => e.delta?.partial_json).map((e) => e.delta?.partial_json).join('')).toBe(JSON.stringify(EXAMPLE));
    const stray = await post('/anthropic/v1/messages', { ...body, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }] }, anthropic);
    expect(stray.status).toBe(400);
    expect(stray.text).toContain('tool_use_id');
  });

  it('Gemini: functionCall parts and JSON replies; function responses must match the calls before them', async () => {
    const path = '/gemini/v1beta/models/gemini-2.5-flash:generateContent';
    const tools = [{ functionDeclarations: [{ name: 'w', parametersJsonSchema: SCHEMA }] }];
    const r = JSON.parse((await post(path, { tools, contents: [{ role: 'user', parts: [{ text: 'go' }] }] }, { 'x-goog-api-key': 'g' })).text);
    expect(r.candidates[0].content.parts).toEqual([{ functionCall: { name: 'w', args: EXAMPLE } }]);
    const j = JSON.parse((await post(path, { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA } }, { 'x-goog-api-key': 'g' })).text);
    expect(JSON.parse(j.candidates[0].content.parts[0].text)).toEqual(EXAMPLE);
    const bad = await post(path, { contents: [{ role: 'user', parts: [{ text: 'x' }] }, { role: 'user', parts: [{ functionResponse: { name: 'w', response: {} } }] }] }, { 'x-goog-api-key': 'g' });
    expect(bad.status).toBe(400);
  });
});

describe('OpenAI Responses, images and moderations', () => {
  it('Responses: a Response object; the SSE events in order; ids it never issued are refused', async () => {
    const r = JSON.parse((await post('/openai/v1/responses', { model: 'gpt-4o-mini', input: 'hi', store: false })).text);
    expect(r).toMatchObject({ object: 'response', status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'This is a simulated reply. This is a' }] }], usage: { output_tokens: 8 } });
    const s = events((await post('/openai/v1/responses', { model: 'gpt-4o-mini', input: 'hi', stream: true, tools: [{ type: 'function', name: 'w', parameters: SCHEMA }] })).text);
    expect(s.map((e) => e.event)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.function_call_arguments.delta',
      'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    expect((await post('/openai/v1/responses', { model: 'gpt-4o-mini', input: 'hi', previous_response_id: 'resp_x' })).status).toBe(400);
    expect((await post('/openai/v1/responses', { model: 'gpt-4o-mini', store: false, input: [{ type: 'message', id: 'msg_1', role: 'assistant', content: [] }] })).status).toBe(400);
  });

  it('images: PNGs as b64_json, gpt-image-1 usage by quality and size; Imagen predictions', async () => {
    const r = JSON.parse((await post('/openai/v1/images/generations', { model: 'gpt-image-1', prompt: 'fox', n: 2, quality: 'high', size: '1024x1536' })).text);
    expect(r.data).toHaveLength(2);
    expect(Buffer.from(r.data[0].b64_json, 'base64').subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    expect(r.usage).toMatchObject({ output_tokens: 2 * 6240, input_tokens: 1 });
    expect((await post('/openai/v1/images/generations', { model: 'dall-e-3', prompt: 'fox', n: 2 })).status).toBe(400);
    const imagen = JSON.parse((await post('/gemini/v1beta/models/imagen-4.0-generate-001:predict', { instances: [{ prompt: 'fox' }], parameters: { sampleCount: 2 } }, { 'x-goog-api-key': 'g' })).text);
    expect(imagen.predictions).toHaveLength(2);
    expect(imagen.predictions[0].mimeType).toBe('image/png');
  });

  it('moderations: one result per input, flagged on [[sim:flagged]]', async () => {
    const r = JSON.parse((await post('/openai/v1/moderations', { model: 'omni-moderation-latest', input: ['a', 'b'] })).text);
    expect(r.results.map((x: { flagged: boolean }) => x.flagged)).toEqual([false, false]);
    const f = JSON.parse((await post('/openai/v1/moderations', { input: 'x [[sim:flagged]]' })).text);
    expect(f.results[0]).toMatchObject({ flagged: true, categories: { violence: true } });
  });
});
