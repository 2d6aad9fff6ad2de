import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useGateway } from './fixtures.js';
import { postJson } from './harness.js';

/** A provider refusing the key the gateway sent is upstream_unauthorized, however the provider says it. */
const t = useGateway();

describe('a refused provider key', () => {
  it.each([
    ['openai', 'gpt-4o-mini', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }],
    ['anthropic', 'claude-haiku-4-5', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }],
    // Google answers a bad key with 400 INVALID_ARGUMENT; providers/google.yaml declares auth.rejected_when for it.
    ['google', 'gemini-2.5-flash', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }],
    ['google', 'tune-3-clip-preview', '/v1/music', { prompt: 'a song' }],
  ])('%s (%s) → 502 upstream_unauthorized, nothing charged', async (provider, model, path, body) => {
    const { org, key } = await t.org(`byok-${provider}-${model}`, '1');
    await t.gateway.store.providerKeys.set(org.id, provider, 'bad-org-key');
    const r = await postJson(`${t.url}${path}`, { model, ...body }, key);
    expect(r.status).toBe(502);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'upstream_unauthorized', usedProvider: provider, requestedModel: model });
    expect(await t.balance(org.id)).toBe(1_000_000);
  });

  it('a genuine 400 from Google stays a gateway_error with the provider message', async () => {
    const { key } = await t.org('google-400', '1');
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'x [[sim:status=400]]' }] }, key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error.code).toBe('gateway_error');
  });
});
