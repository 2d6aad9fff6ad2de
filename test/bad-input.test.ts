import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, postJson, tempDir } from './harness.js';

const START = 1_000_000;

const t = useOrgGateway('bad-input', '1', (sim) => {
  // A provider with a short timeout (to provoke 504 quickly) and one whose host refuses connections.
  const providers = copyProviders(tempDir());
  const provider = (id: string, baseUrl: string) => `
id: ${id}
name: ${id}
base_url: ${baseUrl}
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  chat: { path: /chat/completions, dialect: openai, timeout_ms: 300 }
models:
  - { id: ${id}-model, modality: chat, pricing: { prompt: "0.000001", completion: "0.000002" } }
`;
  writeFileSync(join(providers, 'slowpoke.yaml'), provider('slowpoke', `${sim.url}/slowpoke/v1`));
  writeFileSync(join(providers, 'deadend.yaml'), provider('deadend', 'http://127.0.0.1:1/v1'));
  return { providersDir: providers, yaml: {
    server: { host: '127.0.0.1', port: 0, body_limit_bytes: 2048 },
    providers: { slowpoke: { api_key: 'sim-key' }, deadend: { api_key: 'sim-key' } },
  } };
});

const chat = (content = 'hi') => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

async function expectError(res: Promise<{ status: number; body: unknown }>, status: number, code: string): Promise<ErrorBody> {
  const r = await res;
  expect(r.status).toBe(status);
  const body = r.body as ErrorBody;
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(await t.balance(t.orgId)).toBe(START);
  return body;
}

describe('bad input gets a clear 4xx, nothing charged', () => {
  it('malformed JSON → 400 invalid_json', async () => {
    await expectError(postJson(`${t.url}/v1/chat/completions`, '{"model": ', t.key), 400, 'invalid_json');
  });

  it.each([
    ['__proto__', '{"__proto__": {"polluted": true}, "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'],
    ['constructor.prototype', '{"constructor": {"prototype": {"polluted": true}}, "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'],
  ])('a body setting %s → 400 invalid_json, as fastify refuses prototype poisoning', async (_name, body) => {
    const b = await expectError(postJson(`${t.url}/v1/chat/completions`, body, t.key), 400, 'invalid_json');
    expect(b.error.message).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('empty body → 400 invalid_json', async () => {
    await expectError(postJson(`${t.url}/v1/chat/completions`, '', t.key), 400, 'invalid_json');
  });

  it('wrong content type → 415 unsupported_media_type', async () => {
    await expectError(postJson(`${t.url}/v1/chat/completions`, 'model=x', t.key, { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
  });

  it('body over the configured limit → 413 body_too_large', async () => {
    await expectError(postJson(`${t.url}/v1/chat/completions`, chat('x'.repeat(4096)), t.key), 413, 'body_too_large');
  });

  it('unknown model → 404 model_not_found naming the model', async () => {
    const b = await expectError(postJson(`${t.url}/v1/chat/completions`, { ...chat(), model: 'gpt-0' }, t.key), 404, 'model_not_found');
    expect(b.error.message).toContain('gpt-0');
  });

  it('unknown route → 404 route_not_found', async () => {
    await expectError(postJson(`${t.url}/v1/nothing-here`, chat(), t.key), 404, 'route_not_found');
  });

  it('wrong method → 405 with Allow', async () => {
    const r = await fetch(`${t.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect(((await r.json()) as ErrorBody).error.code).toBe('method_not_allowed');
  });

  it('missing field → 400 naming the field', async () => {
    const b = await expectError(postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini' }, t.key), 400, 'invalid_request');
    expect(b.error.param).toBe('messages');
  });

  it('wrong-typed field → 400 naming the field', async () => {
    const b = await expectError(postJson(`${t.url}/v1/chat/completions`, { ...chat(), max_tokens: 'ten' }, t.key), 400, 'invalid_request');
    expect(b.error.param).toBe('max_tokens');
  });

  it('upstream that does not answer in time → 504 upstream_timeout with the routing context', async () => {
    const b = await expectError(postJson(`${t.url}/v1/chat/completions`, { ...chat('[[sim:delay_ms=2000]]'), model: 'slowpoke-model' }, t.key), 504, 'upstream_timeout');
    expect(b.error).toMatchObject({ usedProvider: 'slowpoke', requestedModel: 'slowpoke-model' });
  });

  it('upstream that refuses the connection → 502 upstream_error', async () => {
    const b = await expectError(postJson(`${t.url}/v1/chat/completions`, { ...chat(), model: 'deadend-model' }, t.key), 502, 'upstream_error');
    expect(b.error).toMatchObject({ usedProvider: 'deadend', requestedModel: 'deadend-model' });
  });
});
