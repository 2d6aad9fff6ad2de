import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { chatMicros, post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * POST /v1/responses with the official openai SDK: OpenAI models through OpenAI's own
 * /responses (pass-through), Claude and Gemini translated; non-streamed and streamed
 * with the real event types; function tools and their outputs; responses stored per
 * org for previous_response_id, item references and GET/DELETE.
 */

const t = useOrgGateway('responses', '5', {}, { ledger: true });
const usd = (n: unknown): number => Math.round((n as number) * 1e6);
const REPLY = 'This is a simulated reply. This is a';
const WEATHER = {
  type: 'function' as const, name: 'get_weather', description: 'Weather of a city', strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const MODELS = [
  { model: 'gpt-4o-mini', provider: 'openai', path: '/openai/v1/responses', price: { prompt: '0.15', completion: '0.60' } },
  { model: 'claude-haiku-4-5', provider: 'anthropic', path: '/anthropic/v1/messages', price: { prompt: '1', completion: '5' } },
  { model: 'gemini-2.5-flash', provider: 'google', path: '/gemini/v1beta/models/gemini-2.5-flash:generateContent', price: { prompt: '0.30', completion: '2.50' } },
];

describe.each(MODELS)('$model through client.responses', (c) => {
  it('answers input text with instructions, usage and its cost; the ledger moves by exactly that', async () => {
    const before = await t.balance(t.orgId);
    const calls = t.sim.calls()[`POST ${c.path}`] ?? 0;
    const { data: r, response } = await t.client.responses.create({ model: c.model, instructions: 'Be brief.', input: 'Hello there', max_output_tokens: 100 }).withResponse();
    expect(r).toMatchObject({ object: 'response', status: 'completed', model: c.model, instructions: 'Be brief.', store: true });
    expect(r.id).toMatch(/^resp_/);
    expect(r.output_text).toBe(REPLY);
    expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    const usage = r.usage as unknown as Record<string, number>;
    expect(usage.output_tokens).toBe(8);
    const cost = chatMicros(c.price, { prompt: usage.input_tokens as number, completion: 8 });
    expect(usd(usage.cost_usd_total)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
    expect(t.sim.calls()[`POST ${c.path}`]).toBe(calls + 1);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: c.provider, status: 200, costMicros: cost, costEstimated: false });
  });

  it('streams the Responses events in order, the SDK accumulates the same text, usage and cost in response.completed', async () => {
    const stream = t.client.responses.stream({ model: c.model, input: 'Hello there', max_output_tokens: 100 });
    const types: string[] = [];
    let text = '';
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
    }
    const final = await stream.finalResponse();
    expect(text).toBe(REPLY);
    expect(final.output_text).toBe(REPLY);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(usd((final.usage as unknown as Record<string, number>).cost_usd_total)).toBeGreaterThan(0);
  });

  it('calls a function tool, then answers its output given with previous_response_id (stored conversation)', async () => {
    const first = await t.client.responses.create({ model: c.model, input: 'Weather in Paris?', tools: [WEATHER], max_output_tokens: 100 });
    const call = first.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"sim"}', status: 'completed' });
    const second = await t.client.responses.create({
      model: c.model, previous_response_id: first.id, tools: [WEATHER], max_output_tokens: 100,
      input: [{ type: 'function_call_output', call_id: (call as { call_id: string }).call_id, output: '{"temp":21}' }],
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output_text).toBe('This is a simulated reply. This is a');
  });

  it('streams tool calls as function_call items with argument deltas', async () => {
    const res = await post(`${t.url}/v1/responses`, { model: c.model, input: 'Weather?', tools: [WEATHER], stream: true, max_output_tokens: 100 }, t.key);
    const events = (await readSse(res)).map((e) => ({ name: e.event, data: JSON.parse(e.data) as Record<string, unknown> }));
    for (const e of events) expect(e.data.type).toBe(e.name);
    const seq = events.map((e) => e.data.sequence_number);
    expect(seq).toEqual([...seq].sort((a, b) => Number(a) - Number(b)));
    const args = events.filter((e) => e.name === 'response.function_call_arguments.delta').map((e) => e.data.delta).join('');
    expect(args).toBe('{"city":"sim"}');
    const done = events.find((e) => e.name === 'response.completed')?.data.response as { output: Array<Record<string, unknown>> };
    expect(done.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: '{"city":"sim"}' })]);
  });
});

describe('stored responses', () => {
  it('GET returns the stored response; DELETE removes it; another org gets 404 for both', async () => {
    const r = await t.client.responses.create({ model: 'claude-haiku-4-5', input: 'Keep this', max_output_tokens: 50 });
    const got = await t.client.responses.retrieve(r.id);
    expect(got).toMatchObject({ id: r.id, output_text: r.output_text, status: 'completed' });
    const items = await t.client.responses.inputItems.list(r.id);
    expect(items.data.map((i) => (i as { content?: unknown }).content)).toEqual(['Keep this']);
    const other = await t.org('responses-other', '1');
    const stranger = new OpenAI({ apiKey: other.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    expect(await stranger.responses.retrieve(r.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await stranger.responses.delete(r.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    await t.client.responses.delete(r.id);
    expect(await t.client.responses.retrieve(r.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('store: false keeps nothing: the reply says so and continuing from it is a 400 naming previous_response_id', async () => {
    const r = await t.client.responses.create({ model: 'gemini-2.5-flash', input: 'Forget this', store: false });
    expect((r as unknown as { store: boolean }).store).toBe(false);
    const err = await t.client.responses.create({ model: 'gemini-2.5-flash', input: 'and?', previous_response_id: r.id }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe('previous_response_id');
  });

  it('an item_reference to a stored output item is expanded, so any provider can take the next turn', async () => {
    const first = await t.client.responses.create({ model: 'gpt-4o-mini', input: 'Weather in Paris?', tools: [WEATHER] });
    const call = first.output[0] as { id: string; call_id: string };
    const next = await t.client.responses.create({
      model: 'claude-haiku-4-5', tools: [WEATHER], max_output_tokens: 100,
      input: [{ role: 'user', content: 'Weather in Paris?' }, { type: 'item_reference', id: call.id }, { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
    });
    expect(next.output_text).toBe(REPLY);
    const missing = await postJson(`${t.url}/v1/responses`, { model: 'claude-haiku-4-5', input: [{ type: 'item_reference', id: 'msg_nope_0' }] }, t.key);
    expect(missing).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', param: 'input[0].id' } } });
  });
});

describe('what a provider cannot take is refused before any call, naming the Responses field', () => {
  it.each([
    ['claude-haiku-4-5', { text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } } }, 'text.format'],
    ['claude-haiku-4-5', { input: [{ type: 'computer_call_output', call_id: 'c', output: {} }] }, 'input[0]'],
  ])('%s with %j → 400 naming %s', async (model, extra, param) => {
    const before = JSON.stringify(t.sim.calls());
    const r = await postJson(`${t.url}/v1/responses`, { model, input: 'hi', ...extra }, t.key);
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', param } } });
    expect(JSON.stringify(t.sim.calls())).toBe(before);
  });

  it('an unknown input item type goes to OpenAI untouched rather than being refused', async () => {
    const r = await postJson(`${t.url}/v1/responses`, { model: 'gpt-4o-mini', input: [{ role: 'user', content: 'hi' }, { type: 'mystery_item', data: 1 }] }, t.key);
    expect(r.status).toBe(200);
  });

  it.each([
    [{ input: 5 }, 'input'], [{ input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'], [{ input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
    [{ input: 'x', background: true }, 'background'], [{ input: 'x', text: { format: { type: 'json_schema' } } }, 'text.format'], [{}, 'input'],
  ])('bad input %j → 400 naming %s', async (extra, param) => {
    const r = await postJson(`${t.url}/v1/responses`, { model: 'gpt-4o-mini', ...extra }, t.key);
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', param } } });
  });
});

describe('broken streams', () => {
  it.each(MODELS.map((m) => m.model))('%s: an upstream that breaks mid-stream ends with an error event the SDK raises', async (model) => {
    const stream = t.client.responses.stream({ model, input: 'go [[sim:drop_mid_stream]]', max_output_tokens: 50 });
    const err = await (async () => {
      for await (const _ev of stream) { /* drain */ }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
  });
});
