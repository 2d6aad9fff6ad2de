import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { embed, generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI, { AzureOpenAI, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildMp3, framesForSeconds } from '../simulator/mp3.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { chatMicros, micros, simPromptTokens } from './chat-helpers.js';
import { useProviderGateway } from './fixtures.js';
import { logRow } from './harness.js';

/**
 * Azure OpenAI (providers/azure.yaml): the simulator speaks Azure (deployments paths,
 * api-version, api-key, content filter), the official AzureOpenAI client passes against
 * it, and the gateway serves azure/… models to the openai client, the Anthropic SDK and
 * the Vercel AI SDK at Azure's prices, with Azure's content filter mapped and uncharged.
 * Prices are written out here (USD per million tokens), not read from the YAML.
 */

const MINI = { prompt: '0.15', completion: '0.60' };
const PROMPT = 'Hello there [[sim:tokens=7]]';
const REPLY = 'This is a simulated reply. This is';

describe('the simulator speaks Azure OpenAI (the official AzureOpenAI client, pointed straight at it)', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
  });
  afterAll(async () => sim.close());
  const azure = (opts: { apiKey?: string; apiVersion?: string } = {}) => new AzureOpenAI({
    endpoint: `${sim.url}/azure`, apiKey: opts.apiKey ?? 'sim-key', apiVersion: opts.apiVersion ?? '2024-10-21', deployment: 'my-mini', maxRetries: 0,
  });

  it('answers chat on /openai/deployments/{deployment}/chat/completions with the api-key header', async () => {
    const r = await azure().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }] });
    expect(r.choices[0]?.message.content).toBe(REPLY);
    expect((r as unknown as { prompt_filter_results: unknown[] }).prompt_filter_results).toHaveLength(1);
    const call = sim.received().at(-1)!;
    expect(call.route).toBe('POST /azure/openai/deployments/my-mini/chat/completions');
    expect(call.headers['api-key']).toBe('sim-key');
  });

  it('streams, opening with the prompt filter results in a chunk without choices', async () => {
    const stream = await azure().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }], stream: true });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]?.choices).toEqual([]);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(REPLY);
  });

  it('embeds on the deployment path', async () => {
    const r = await new AzureOpenAI({ endpoint: `${sim.url}/azure`, apiKey: 'sim-key', apiVersion: '2024-10-21', maxRetries: 0 })
      .embeddings.create({ model: 'emb-small', input: ['a', 'b'] });
    expect(r.data).toHaveLength(2);
    expect(sim.received().at(-1)!.route).toBe('POST /azure/openai/deployments/emb-small/embeddings');
  });

  it('refuses an unsupported api-version, a wrong key and a token it did not issue, in Azure\'s error shape', async () => {
    const version = await azure({ apiVersion: '2019-01-01' }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(version).toBeInstanceOf(OpenAI.BadRequestError);
    expect((version as InstanceType<typeof OpenAI.APIError>).code).toBe('BadRequest');
    const key = await azure({ apiKey: 'bad-key' }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(key).toBeInstanceOf(OpenAI.AuthenticationError);
    const forged = new AzureOpenAI({ endpoint: `${sim.url}/azure`, azureADTokenProvider: async () => 'made-up-token', apiVersion: '2024-10-21', deployment: 'd', maxRetries: 0 });
    const token = await forged.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(token).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('refuses a filtered prompt with 400 content_filter', async () => {
    const err = await azure().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x [[sim:safety_block]]' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('content_filter');
  });
});

describe('azure through the gateway', () => {
  const t = useProviderGateway('azure-user', '5', 'azure', (sim) => ({ base_url: `${sim.url}/azure/openai`, api_key: 'sim-key', deployments: { 'gpt-4o-mini': 'mini-prod' } }));
  const expected = chatMicros(MINI, { prompt: simPromptTokens(PROMPT), completion: 7 });
  const lastCall = () => t.sim.received().at(-1)!;

  it('serves azure/gpt-4o-mini to the openai client on its deployment, with the api-key header, billed at Azure\'s price', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.chat.completions.create({ model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: PROMPT }] }).withResponse();
    expect(data.choices[0]?.message.content).toBe(REPLY);
    expect(lastCall().route).toBe('POST /azure/openai/deployments/mini-prod/chat/completions');
    expect(lastCall().headers['api-key']).toBe('sim-key');
    expect(lastCall().headers.authorization).toBeUndefined();
    expect(Math.round((data.usage as unknown as { cost_usd_total: number }).cost_usd_total * 1e6)).toBe(expected);
    expect(before - (await t.balance(t.orgId))).toBe(expected);
    expect(await logRow(t, response.headers.get('x-request-id') ?? '')).toMatchObject({ usedProvider: 'azure', costMicros: expected, status: 200 });
  });

  it('streams through the prompt-filter chunk, with usage and cost', async () => {
    const before = await t.balance(t.orgId);
    const stream = await t.client.chat.completions.create({
      model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: PROMPT }], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage: { completion_tokens: number } | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    expect(text).toBe(REPLY);
    expect(usage?.completion_tokens).toBe(7);
    expect(before - (await t.balance(t.orgId))).toBe(expected);
  });

  it('routes unpinned gpt-4o-mini to azure first once it is configured (providers in file-name order)', async () => {
    await t.client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    expect(lastCall().route).toBe('POST /azure/openai/deployments/mini-prod/chat/completions');
  });

  it('returns tool calls to the openai client', async () => {
    const r = await t.client.chat.completions.create({
      model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
    });
    expect(r.choices[0]?.finish_reason).toBe('tool_calls');
    const call = r.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function.name : undefined).toBe('weather');
  });

  it('embeds with azure/text-embedding-3-small on the default deployment (the model\'s Azure name)', async () => {
    const before = await t.balance(t.orgId);
    const r = await t.client.embeddings.create({ model: 'azure/text-embedding-3-small', input: 'hello world' });
    expect(r.data[0]?.embedding).toHaveLength(1536);
    expect(lastCall().route).toBe('POST /azure/openai/deployments/text-embedding-3-small/embeddings');
    expect(before - (await t.balance(t.orgId))).toBe(micros(r.usage.prompt_tokens, '0.02'));
  });

  it('transcribes with azure/whisper-1 on the whisper deployment, billed per second', async () => {
    const before = await t.balance(t.orgId);
    const file = await toFile(buildMp3(framesForSeconds(10)), 'clip.mp3');
    const r = await t.client.audio.transcriptions.create({ file, model: 'azure/whisper-1' });
    expect(typeof r.text).toBe('string');
    expect(lastCall().route).toBe('POST /azure/openai/deployments/whisper/audio/transcriptions');
    expect(before - (await t.balance(t.orgId))).toBe(10 * 100);
  });

  it('serves the Anthropic SDK on /v1/messages: text, stream and tool_use', async () => {
    const sdk = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
    const m = await sdk.messages.create({ model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: PROMPT }] });
    expect(m.content[0]).toMatchObject({ type: 'text', text: REPLY });
    let streamed = '';
    for await (const e of sdk.messages.stream({ model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: PROMPT }] })) {
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') streamed += e.delta.text;
    }
    expect(streamed).toBe(REPLY);
    const tools = await sdk.messages.create({
      model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Weather?' }],
      tools: [{ name: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
    });
    expect(tools.stop_reason).toBe('tool_use');
    expect(tools.content.find((b) => b.type === 'tool_use')).toMatchObject({ name: 'weather' });
    expect(lastCall().route).toBe('POST /azure/openai/deployments/mini-prod/chat/completions');
  });

  it('serves the Vercel AI SDK: generateText with a tool, streamText, embed', async () => {
    const openai = createOpenAI({ apiKey: t.key, baseURL: `${t.url}/v1` });
    const seen: string[] = [];
    const weather = tool({ description: 'Weather of a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => {
      seen.push(city);
      return { city, temperature: 21 };
    } });
    const g = await generateText({ model: openai.chat('azure/gpt-4o-mini'), prompt: 'Weather?', tools: { weather }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    expect(seen).toHaveLength(1);
    expect(g.text.length).toBeGreaterThan(0);
    const s = streamText({ model: openai.chat('azure/gpt-4o-mini'), prompt: PROMPT, maxOutputTokens: 50 });
    expect(await s.text).toBe(REPLY);
    const e = await embed({ model: openai.textEmbeddingModel('azure/text-embedding-3-large'), value: 'hello' });
    expect(e.embedding).toHaveLength(3072);
    expect(lastCall().route).toBe('POST /azure/openai/deployments/text-embedding-3-large/embeddings');
  });

  it('maps Azure\'s content_filter refusal of the prompt to content_blocked (422), charging nothing', async () => {
    const before = await t.balance(t.orgId);
    const err = await t.client.chat.completions.create({ model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'x [[sim:safety_block]]' }] })
      .withResponse().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.code).toBe('content_blocked');
    expect(apiErr.message).toContain('content management policy');
    expect(await t.balance(t.orgId)).toBe(before);
    expect(await logRow(t, apiErr.headers?.get('x-request-id') ?? '')).toMatchObject({ usedProvider: 'azure', costMicros: 0, errorCode: 'content_blocked' });
  });

  it('passes finish_reason content_filter through and bills what was generated before the cut', async () => {
    const before = await t.balance(t.orgId);
    const prompt = 'Tell me [[sim:tokens=8,safety_finish]]';
    const r = await t.client.chat.completions.create({ model: 'azure/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: prompt }] });
    expect(r.choices[0]?.finish_reason).toBe('content_filter');
    expect(r.usage?.completion_tokens).toBe(4);
    expect(before - (await t.balance(t.orgId))).toBe(chatMicros(MINI, { prompt: simPromptTokens(prompt), completion: 4 }));
  });
});

describe('azure with a key Azure refuses', () => {
  const t = useProviderGateway('azure-badkey', '1', 'azure', (sim) => ({ base_url: `${sim.url}/azure/openai`, api_key: 'bad-azure-key' }));

  it('answers upstream_unauthorized and charges nothing', async () => {
    const before = await t.balance(t.orgId);
    const err = await t.client.chat.completions.create({ model: 'azure/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_unauthorized');
    expect(await t.balance(t.orgId)).toBe(before);
  });
});
