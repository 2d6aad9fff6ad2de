import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { chatMicros, post, readSse, simPromptTokens } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson, providerHead, providersWith } from './harness.js';

/**
 * Rules a provider's YAML states for its models and endpoints: the output-limit field
 * of OpenAI's reasoning models (max_completion_tokens), Gemini 2.5 Pro's price tier for
 * prompts over 200k tokens, and a first-byte timeout that moves a stalled stream on to
 * the next route before anything reached the client.
 */

const t = useOrgGateway('upstream-rules', '20', (sim) => {
  // "stally" serves gpt-4o-mini first (file-name order) and gives a stream 300 ms to start; openai serves it second.
  const dir = providersWith({ '0-stally.yaml': `${providerHead('stally', 'Stally', `${sim.url}/stally/v1`)}
endpoints:
  chat: { path: /chat/completions, dialect: openai, first_byte_timeout_ms: 300, retry: { attempts: 1 }, fallback: true }
models:
  - { id: gpt-4o-mini, modality: chat, max_output_tokens: 1000, pricing: { prompt: "0.000001", completion: "0.000002" } }
` });
  return { providersDir: dir, yaml: { providers: { stally: { api_key: 'sim-key' } } } };
}, { ledger: true });

describe('max_completion_tokens for OpenAI reasoning models (max_tokens_param in YAML)', () => {
  it.each(['o4-mini', 'gpt-5-mini'])('/v1/messages with max_tokens reaches %s as max_completion_tokens (OpenAI refuses max_tokens for it)', async (model) => {
    const anthropic = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
    const msg = await anthropic.messages.create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage.output_tokens).toBe(5);
  });

  it('an OpenAI-format request with max_tokens to gpt-5 is renamed too; gpt-4o-mini keeps max_tokens', async () => {
    const r = await t.client.chat.completions.create({ model: 'gpt-5', max_tokens: 3, messages: [{ role: 'user', content: 'Hi' }] });
    expect(r.usage?.completion_tokens).toBe(3);
    const direct = await postJson(`${t.sim.url}/openai/v1/chat/completions`, { model: 'gpt-5', max_tokens: 3, messages: [{ role: 'user', content: 'Hi' }] }, 'sim-key');
    expect(direct.status).toBe(400); // what the gateway saves the client from
  });
});

describe('Gemini 2.5 Pro: a prompt over 200k tokens is priced at the higher tier', () => {
  it.each([
    ['at the threshold: the base prices', 199_997 * 4, { prompt: '1.25', completion: '10' }],
    ['past it: the tier prices, input and output', 200_000 * 4, { prompt: '2.50', completion: '15' }],
  ])('%s', async (_n, chars, price) => {
    const content = 'x'.repeat(chars);
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gemini-2.5-pro', max_tokens: 100, messages: [{ role: 'user', content }] }, t.key, {});
    expect(r.status).toBe(200);
    const prompt = (r.body as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    expect(prompt).toBe(simPromptTokens(content));
    const cost = chatMicros(price, { prompt, completion: 8 });
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });
});

describe('first_byte_timeout_ms: a stalled stream falls back before the client sees a byte', () => {
  it.each([
    ['headers, then no body', '[[sim@stally:body_delay_ms=5000]]'],
    ['no headers at all', '[[sim@stally:delay_ms=5000]]'],
  ])('%s → the next route serves the stream; both attempts are logged', async (_n, directive) => {
    const res = await post(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', max_tokens: 20, stream: true, messages: [{ role: 'user', content: `Hi ${directive}` }] }, t.key);
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events[events.length - 1]?.data).toBe('[DONE]');
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'openai', status: 200 });
    expect(row.attempts.map((a) => [a.provider, a.status, a.error])).toEqual([['stally', null, 'no first byte within 300 ms'], ['openai', 200, null]]);
  });

  it('a non-streamed request is not held to it (its whole reply may rightly take long)', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: 'Hi [[sim@stally:delay_ms=600]]' }] }, t.key);
    expect(r.status).toBe(200);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'stally', costMicros: chatMicros({ prompt: '1', completion: '2' }, { prompt: simPromptTokens('Hi [[sim@stally:delay_ms=600]]'), completion: 8 }) });
  });

  it('when every route stalls, the client gets 504 upstream_timeout naming the first-byte limit', async () => {
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'stally/gpt-4o-mini', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'Hi [[sim@stally:body_delay_ms=5000]]' }] }, t.key);
    expect(res).toMatchObject({ status: 504, body: { error: { code: 'upstream_timeout', message: expect.stringContaining('300 ms') } } });
  });
});
