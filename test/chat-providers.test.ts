import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { chatMicros, simPromptTokens, type PerMillion } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow } from './harness.js';

/**
 * Every declared chat provider, through the official `openai` client, unchanged:
 * non-streamed, streamed with and without include_usage, and an upstream failure.
 * Prices are written out here (USD per million tokens), not read from the YAML.
 */
interface ProviderCase {
  provider: string;
  model: string;
  upstreamModel: string;
  price: PerMillion;
  /** Simulator route keys hit by a plain and a streamed call. */
  calls: { plain: string; stream: string };
}

const openaiCompatible = (provider: string, model: string, prefix: string, price: PerMillion): ProviderCase => ({
  provider, model, upstreamModel: model, price, calls: { plain: `POST ${prefix}/chat/completions`, stream: `POST ${prefix}/chat/completions` },
});

const CASES: ProviderCase[] = [
  openaiCompatible('openai', 'gpt-4o-mini', '/openai/v1', { prompt: '0.15', completion: '0.60' }),
  {
    // Pinned: claude-haiku-4-5 is also served by bedrock, where a failure here would fall back to.
    provider: 'anthropic', model: 'anthropic/claude-haiku-4-5', upstreamModel: 'claude-haiku-4-5-20251001', price: { prompt: '1', completion: '5' },
    calls: { plain: 'POST /anthropic/v1/messages', stream: 'POST /anthropic/v1/messages' },
  },
  {
    provider: 'google', model: 'gemini-2.5-flash', upstreamModel: 'gemini-2.5-flash', price: { prompt: '0.30', completion: '2.50' },
    calls: {
      plain: 'POST /gemini/v1beta/models/gemini-2.5-flash:generateContent',
      stream: 'POST /gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent',
    },
  },
  {
    provider: 'bedrock', model: 'nova-micro', upstreamModel: 'amazon.nova-micro-v1:0', price: { prompt: '0.035', completion: '0.14' },
    calls: { plain: 'POST /bedrock/model/amazon.nova-micro-v1%3A0/converse', stream: 'POST /bedrock/model/amazon.nova-micro-v1%3A0/converse-stream' },
  },
  openaiCompatible('groq', 'llama-3.1-8b-instant', '/groq/openai/v1', { prompt: '0.05', completion: '0.08' }),
  openaiCompatible('deepseek', 'deepseek-chat', '/deepseek/v1', { prompt: '0.28', completion: '0.42' }),
  openaiCompatible('mistral', 'mistral-small-latest', '/mistral/v1', { prompt: '0.10', completion: '0.30' }),
  // OpenAI-compatible hosts declared by YAML alone (issue 30): no code.
  openaiCompatible('xai', 'grok-3-mini', '/xai/v1', { prompt: '0.30', completion: '0.50' }),
  { ...openaiCompatible('together', 'llama-3.3-70b-instruct-turbo', '/together/v1', { prompt: '0.88', completion: '0.88' }), upstreamModel: 'meta-llama/Llama-3.3-70B-Instruct-Turbo' },
  { ...openaiCompatible('fireworks', 'gpt-oss-120b', '/fireworks/inference/v1', { prompt: '0.15', completion: '0.60' }), upstreamModel: 'accounts/fireworks/models/gpt-oss-120b' },
  { ...openaiCompatible('openrouter', 'openrouter-gpt-3.5-turbo', '/openrouter/api/v1', { prompt: '0.50', completion: '1.50' }), upstreamModel: 'openai/gpt-3.5-turbo' },
];

const t = useOrgGateway('providers', '5', {}, { ledger: true });

const PROMPT = 'Hello there [[sim:tokens=7]]';
const calls = (key: string): number => t.sim.calls()[key] ?? 0;

it('covers every provider that declares a chat endpoint', () => {
  // Clouds whose auth is a scheme (Vertex's service account) have their own files, with the credentials they need (test/vertex.test.ts).
  const declared = [...t.gateway.catalog.providers.values()].filter((p) => p.endpoints.chat && !p.auth.scheme).map((p) => p.id).sort();
  expect(declared).toEqual(CASES.map((c) => c.provider).sort());
});

describe.each(CASES)('$provider ($model) through the openai client', (c) => {
  const expected = chatMicros(c.price, { prompt: simPromptTokens(PROMPT), completion: 7 });

  it('answers a non-streamed completion, billed at the YAML prices from the upstream usage', async () => {
    const before = await t.balance(t.orgId);
    const n = calls(c.calls.plain);
    const { data, response } = await t.client.chat.completions.create({ model: c.model, max_tokens: 50, messages: [{ role: 'user', content: PROMPT }] }).withResponse();
    expect(calls(c.calls.plain)).toBe(n + 1);
    expect(data.object).toBe('chat.completion');
    expect(data.model).toBe(c.model);
    expect(data.choices[0]?.message.content).toBe('This is a simulated reply. This is');
    expect(data.choices[0]?.finish_reason).toBe('stop');
    const usage = data.usage as unknown as Record<string, number>;
    expect(usage).toMatchObject({ prompt_tokens: simPromptTokens(PROMPT), completion_tokens: 7, total_tokens: simPromptTokens(PROMPT) + 7 });
    expect(Math.round(usage.cost_usd_total! * 1e6)).toBe(expected);
    expect(Math.round((usage.cost_usd_input! + usage.cost_usd_output!) * 1e6)).toBe(expected);
    expect(before - (await t.balance(t.orgId))).toBe(expected);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: c.provider, usedModel: c.upstreamModel, requestedModel: c.model, status: 200, costMicros: expected, costEstimated: false });
  });

  it('streams chunks and a final usage chunk with cost when include_usage is asked', async () => {
    const before = await t.balance(t.orgId);
    const n = calls(c.calls.stream);
    const stream = await t.client.chat.completions.create({
      model: c.model, max_tokens: 50, messages: [{ role: 'user', content: PROMPT }], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage: Record<string, number> | undefined;
    let finish: string | null | undefined;
    let contentChunks = 0;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      const delta = chunk.choices[0]?.delta.content ?? '';
      if (delta) contentChunks++;
      text += delta;
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, number>;
    }
    expect(calls(c.calls.stream)).toBe(n + 1);
    expect(text).toBe('This is a simulated reply. This is');
    expect(contentChunks).toBe(7); // one per upstream event: forwarded as they arrived, not re-chunked
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: simPromptTokens(PROMPT), completion_tokens: 7 });
    expect(Math.round(usage!.cost_usd_total! * 1e6)).toBe(expected);
    expect(before - (await t.balance(t.orgId))).toBe(expected);
  });

  it('streams without a usage chunk when not asked, yet bills the upstream usage (not an estimate)', async () => {
    const before = await t.balance(t.orgId);
    const { data: stream, response } = await t.client.chat.completions.create({
      model: c.model, max_tokens: 50, messages: [{ role: 'user', content: PROMPT }], stream: true,
    }).withResponse();
    let sawUsage = false;
    let text = '';
    for await (const chunk of stream) {
      if (chunk.usage) sawUsage = true;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(sawUsage).toBe(false);
    expect(text).toBe('This is a simulated reply. This is');
    expect(before - (await t.balance(t.orgId))).toBe(expected);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: c.provider, costMicros: expected, costEstimated: false, status: 200 });
  });

  it('turns an upstream 5xx into an SDK error with code upstream_error, charging nothing', async () => {
    const before = await t.balance(t.orgId);
    const err = await t.client.chat.completions.create({ model: c.model, max_tokens: 50, messages: [{ role: 'user', content: 'x [[sim:status=500]]' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.status).toBe(502);
    expect(apiErr.code).toBe('upstream_error');
    expect(apiErr.error).toMatchObject({ usedProvider: c.provider, requestedModel: c.model });
    expect(await t.balance(t.orgId)).toBe(before);
  });
});
