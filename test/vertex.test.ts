import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { chatMicros, type PerMillion } from './chat-helpers.js';
import { logRow, postJson, tempDir } from './harness.js';
import { useVertexGateway } from './vertex-helpers.js';

/**
 * Google Vertex AI through the gateway: unmodified openai, @anthropic-ai/sdk and
 * @google/genai clients to `vertex/…` models (Gemini over generateContent, Claude over
 * rawPredict), with the gateway minting its access token from a service-account key at
 * the simulator's token endpoint, which verifies the signed assertion.
 */
const dir = tempDir();
const REPLY = 'This is a simulated reply. This is a';
const PRICES: Record<string, PerMillion> = {
  'vertex/gemini-2.5-flash': { prompt: '0.30', completion: '2.50' },
  'vertex/claude-haiku-4-5': { prompt: '1.10', completion: '5.50' },
};
const MODELS = Object.keys(PRICES);
const usd = (n: unknown): number => Math.round((n as number) * 1e6);
const WEATHER: OpenAI.ChatCompletionTool = {
  type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

const { t } = useVertexGateway('vertex', dir);

describe.each(MODELS)('%s with the openai client', (model) => {
  it('a reply, its usage priced at Vertex\'s prices, charged exactly that', async () => {
    const before = await t.balance(t.orgId);
    const r = await t.client.chat.completions.create({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(r.choices[0]?.message.content).toBe(REPLY);
    const usage = r.usage as OpenAI.CompletionUsage & { cost_usd_total: number };
    expect(usage.completion_tokens).toBe(8);
    const cost = chatMicros(PRICES[model] as PerMillion, { prompt: usage.prompt_tokens, completion: usage.completion_tokens });
    expect(usd(usage.cost_usd_total)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });

  it('a stream', async () => {
    const stream = await t.client.chat.completions.create({ model, max_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hello there' }] });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(REPLY);
    expect(usage?.completion_tokens).toBe(8);
  });

  it('a tool call and its result', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await t.client.chat.completions.create({ model, max_tokens: 100, messages, tools: [WEATHER] });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    const next = await t.client.chat.completions.create({
      model, max_tokens: 100, tools: [WEATHER],
      messages: [...messages, first.choices[0]!.message, { role: 'tool', tool_call_id: call!.id, content: '{"temp": 21}' }],
    });
    expect(next.choices[0]?.finish_reason).toBe('stop');
  });
});

describe('Claude on Vertex AI, as the gateway sends it', () => {
  it('rawPredict with the version in the body, no model in it, the model (Vertex\'s id) in the path', async () => {
    await t.client.chat.completions.create({ model: 'vertex/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
    const sent = t.sim.received().at(-1);
    expect(sent?.route).toMatch(/\/publishers\/anthropic\/models\/claude-haiku-4-5(@|%40)20251001:rawPredict$/);
    expect(sent?.route).toContain('/projects/tollgate-test/locations/us-central1/');
    const body = JSON.parse(sent?.body ?? '{}') as Record<string, unknown>;
    expect(body.anthropic_version).toBe('vertex-2023-10-16');
    expect(body).not.toHaveProperty('model');
    expect(sent?.headers.authorization).toMatch(/^Bearer ya29\.sim-/);
  });
});

describe('@anthropic-ai/sdk on /v1/messages', () => {
  const client = (): Anthropic => new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });

  it.each(MODELS)('%s: a message, a stream and a tool_use', async (model) => {
    const msg = await client().messages.create({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Hello there' }] });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: REPLY });
    // Each model on its own publisher's endpoint (Gemini is not sent to Claude's rawPredict because the client spoke Anthropic).
    expect(t.sim.received().at(-1)?.route).toContain(model.includes('gemini') ? '/publishers/google/' : '/publishers/anthropic/');
    let text = '';
    for await (const ev of client().messages.stream({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Hello there' }] })) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    }
    expect(text).toBe(REPLY);
    const tool = await client().messages.create({
      model, max_tokens: 100, messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
    });
    expect(tool.stop_reason).toBe('tool_use');
    expect(tool.content.find((b) => b.type === 'tool_use')).toMatchObject({ name: 'get_weather' });
  });
});

describe('@google/genai (the Gemini API format)', () => {
  it.each(MODELS)('%s: generateContent and a stream', async (model) => {
    const ai = new GoogleGenAI({ apiKey: t.key, httpOptions: { baseUrl: t.url } });
    const r = await ai.models.generateContent({ model, contents: 'Hello there', config: { maxOutputTokens: 100 } });
    expect(r.text).toBe(REPLY);
    expect(t.sim.received().at(-1)?.route).toMatch(/^POST \/vertex\/v1\/projects\/tollgate-test\/locations\/us-central1\/publishers\/(google|anthropic)\//);
    let text = '';
    for await (const chunk of await ai.models.generateContentStream({ model, contents: 'Hello there', config: { maxOutputTokens: 100 } })) text += chunk.text ?? '';
    expect(text).toBe(REPLY);
  });
});

describe('unpinned ids', () => {
  it('claude-haiku-4-5 falls back from Anthropic and Bedrock (5xx) to Vertex, billed at Vertex\'s price', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.chat.completions.create({
      model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'Hello [[sim@anthropic:status=503]] [[sim@bedrock:aws_error=ServiceUnavailableException]]' }],
    }).withResponse();
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'vertex', usedModel: 'claude-haiku-4-5@20251001', status: 200 });
    const cost = chatMicros(PRICES['vertex/claude-haiku-4-5'] as PerMillion, { prompt: data.usage!.prompt_tokens, completion: data.usage!.completion_tokens });
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });
});

describe('Vertex errors', () => {
  it.each(MODELS)('%s: 429 RESOURCE_EXHAUSTED → upstream_rate_limited, nothing charged', async (model) => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, { model, max_tokens: 10, messages: [{ role: 'user', content: 'x [[sim:status=429]]' }] }, t.key);
    expect(r.status).toBe(429);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'upstream_rate_limited', usedProvider: 'vertex' });
    expect(await t.balance(t.orgId)).toBe(before);
  });
});
