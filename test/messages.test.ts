import Anthropic from '@anthropic-ai/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatMicros, post, readSse, type PerMillion } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * POST /v1/messages: Anthropic's format in and out, so Anthropic SDK users reach every
 * chat model — Claude untranslated, Gemini and OpenAI models translated — with the
 * gateway's cost in `usage`, named-event streaming, x-api-key or Bearer auth.
 */

const t = useOrgGateway('messages', '5', {}, { ledger: true });
let client: Anthropic;
beforeAll(() => {
  client = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
});

const SYSTEM = 'Be brief.';
const USER = 'Hello there';
const REPLY = 'This is a simulated reply. This is a';

interface ModelCase {
  model: string;
  provider: string;
  price: PerMillion;
  /** The provider's prompt count for SYSTEM + USER: the system prompt must have been carried over. */
  promptTokens: number;
}

const MODELS: ModelCase[] = [
  // Anthropic counts system + messages: ceil(20/4) + 3·1. Gemini: system + 1 content. OpenAI: 2 messages (system is one).
  { model: 'claude-haiku-4-5', provider: 'anthropic', price: { prompt: '1', completion: '5' }, promptTokens: 8 },
  { model: 'gemini-2.5-flash', provider: 'google', price: { prompt: '0.30', completion: '2.50' }, promptTokens: 8 },
  { model: 'gpt-4o-mini', provider: 'openai', price: { prompt: '0.15', completion: '0.60' }, promptTokens: 11 },
];

const params = (model: string) => ({ model, max_tokens: 100, system: SYSTEM, messages: [{ role: 'user' as const, content: USER }] });
const usd = (n: unknown): number => Math.round((n as number) * 1e6);

describe.each(MODELS)('$model through the Anthropic SDK', (c) => {
  const cost = chatMicros(c.price, { prompt: c.promptTokens, completion: 8 });

  it('answers a message in Anthropic form, with usage and cost', async () => {
    const before = await t.balance(t.orgId);
    const { data: msg, response } = await client.messages.create(params(c.model)).withResponse();
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: c.model, stop_reason: 'end_turn' });
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.content).toEqual([{ type: 'text', text: REPLY }]);
    const usage = msg.usage as unknown as Record<string, number>;
    expect(usage).toMatchObject({ input_tokens: c.promptTokens, output_tokens: 8, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    expect(usd(usage.cost_usd_total)).toBe(cost);
    expect(usd(usage.cost_usd_input) + usd(usage.cost_usd_output)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: c.provider, requestedModel: c.model, status: 200, costMicros: cost, costEstimated: false });
  });

  it('streams named events the SDK accumulates into the same message', async () => {
    const before = await t.balance(t.orgId);
    const stream = client.messages.stream(params(c.model));
    const types: string[] = [];
    let text = '';
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    }
    const final = await stream.finalMessage();
    expect(text).toBe(REPLY);
    expect(final.content).toEqual([{ type: 'text', text: REPLY, ...(final.content[0] && 'citations' in final.content[0] ? { citations: final.content[0].citations } : {}) }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage).toMatchObject({ input_tokens: c.promptTokens, output_tokens: 8 });
    expect(types[0]).toBe('message_start');
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(types.filter((x) => x === 'content_block_delta')).toHaveLength(8);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });

  it('puts the billed cost in the message_delta usage of a raw stream', async () => {
    const events = await client.messages.create({ ...params(c.model), stream: true });
    let usage: Record<string, unknown> | undefined;
    for await (const ev of events) if (ev.type === 'message_delta') usage = ev.usage as unknown as Record<string, unknown>;
    expect(usage).toMatchObject({ input_tokens: c.promptTokens, output_tokens: 8 });
    expect(usd(usage?.cost_usd_total)).toBe(cost);
  });

  it('raises an APIError when the upstream breaks mid-stream, after the delivered text', async () => {
    const stream = client.messages.stream({ ...params(c.model), messages: [{ role: 'user', content: 'go [[sim:drop_mid_stream]]' }] });
    let text = '';
    const err = await (async () => {
      for await (const ev of stream) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(text.length).toBeGreaterThan(0);
    expect(REPLY.startsWith(text)).toBe(true);
  });
});

describe('auth, version and errors in Anthropic form', () => {
  it('accepts x-api-key (older SDKs) as well as Bearer, and any anthropic-version', async () => {
    const r = await postJson(`${t.url}/v1/messages`, params('gemini-2.5-flash'), undefined, { 'x-api-key': t.key, 'anthropic-version': '2023-06-01' });
    expect(r.status).toBe(200);
    expect((r.body as { content: unknown }).content).toEqual([{ type: 'text', text: REPLY }]);
  });

  it('forwards the client\'s anthropic-version to Claude, so the provider applies that version\'s rules', async () => {
    // Under 2026-10-21 (what this SDK sends) the provider refuses temperature; under 2023-06-01 it accepts it.
    const withTemperature = { ...params('claude-haiku-4-5'), temperature: 0.5 } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const strict = await client.messages.create(withTemperature).catch((e: unknown) => e);
    expect(strict).toBeInstanceOf(Anthropic.BadRequestError);
    expect((strict as Error).message).toContain('temperature');
    const old = await postJson(`${t.url}/v1/messages`, { ...params('claude-haiku-4-5'), temperature: 0.5 }, undefined, { 'x-api-key': t.key, 'anthropic-version': '2023-06-01' });
    expect(old.status).toBe(200);
  });

  it('a missing key is a 401 authentication_error', async () => {
    const r = await postJson(`${t.url}/v1/messages`, params('claude-haiku-4-5'));
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'authentication_error', code: 'missing_api_key' } });
    const bad = new Anthropic({ apiKey: 'tg_wrong', baseURL: t.url, maxRetries: 0 });
    expect(await bad.messages.create(params('claude-haiku-4-5')).catch((e: unknown) => e)).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('an unknown model is a 404 not_found_error with code model_not_found', async () => {
    const err = await client.messages.create(params('claude-0')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    const r = await postJson(`${t.url}/v1/messages`, params('claude-0'), t.key);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'not_found_error', code: 'model_not_found', param: 'model' } });
  });

  it('an upstream 5xx is a 502 api_error, not retried by the SDK, nothing charged', async () => {
    const before = await t.balance(t.orgId);
    // Pinned: unpinned, the failure would fall back to bedrock, which serves claude-haiku-4-5 too.
    const res = await post(`${t.url}/v1/messages`, { ...params('anthropic/claude-haiku-4-5'), messages: [{ role: 'user', content: 'x [[sim:status=500]]' }] }, t.key);
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'upstream_error', usedProvider: 'anthropic', requestedModel: 'anthropic/claude-haiku-4-5' } });
    expect(await t.balance(t.orgId)).toBe(before);
  });
});

describe('what crosses formats and what does not', () => {
  const tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } };

  it.each(['claude-haiku-4-5', 'gemini-2.5-flash', 'gpt-4o-mini'])('tools reach %s (Claude as written, the others translated) and come back as tool_use', async (model) => {
    const msg = await client.messages.create({ ...params(model), tools: [tool] });
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.content).toEqual([expect.objectContaining({ type: 'tool_use', name: 'get_weather', input: { city: 'sim' } })]);
  });

  it.each(['gemini-2.5-flash', 'gpt-4o-mini'])('a server tool other than web search for %s is dropped and named (unsupported_params, test/unsupported-params.test.ts)', async (model) => {
    const r = await postJson(`${t.url}/v1/messages`, { ...params(model), tools: [{ type: 'code_execution_20250522', name: 'code_execution' }] }, t.key);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-tollgate-dropped-params')).toBe('code_execution_20250522');
  });

  it('image blocks are translated (base64 → data URL) for an OpenAI model', async () => {
    const image = { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' } };
    const msg = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: [image, { type: 'text', text: 'What is it?' }] }] });
    expect(msg.content[0]).toMatchObject({ type: 'text' });
  });

  it('a stream is billed from the upstream usage even through translation (log row not estimated)', async () => {
    const res = await post(`${t.url}/v1/messages`, { ...params('gpt-4o-mini'), stream: true }, t.key);
    const events = await readSse(res);
    expect(events.map((e) => e.event)).toContain('message_delta');
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ costEstimated: false, costMicros: chatMicros({ prompt: '0.15', completion: '0.60' }, { prompt: 11, completion: 8 }) });
  });
});
