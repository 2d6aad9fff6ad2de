import { describe, expect, it } from 'vitest';
import { revokeKey } from '../src/tenancy/admin.js';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

let clock = Date.now();
const t = useOrgGateway('auth-org', '1', { now: () => clock });
const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

const call = (headers: Record<string, string>) => postJson(`${t.url}/v1/chat/completions`, chat, undefined, headers);

describe('auth on /v1', () => {
  it('accepts a valid bearer key', async () => {
    expect((await call({ authorization: `Bearer ${t.key}` })).status).toBe(200);
  });

  it.each([
    ['missing', () => ({}), 'missing_api_key'],
    ['empty bearer', () => ({ authorization: 'Bearer ' }), 'invalid_api_key'],
    ['not bearer', () => ({ authorization: `Basic ${t.key}` }), 'invalid_api_key'],
    ['malformed key', () => ({ authorization: 'Bearer sk-123' }), 'invalid_api_key'],
    ['well-formed but unknown', () => ({ authorization: `Bearer tg_${'A'.repeat(40)}` }), 'invalid_api_key'],
    ['right prefix, wrong secret', () => ({ authorization: `Bearer ${t.key.slice(0, 11)}${'x'.repeat(32)}` }), 'invalid_api_key'],
  ])('refuses a %s key with 401 and an OpenAI-style body', async (_name, headers: () => Record<string, string>, code) => {
    const r = await call(headers());
    expect(r.status).toBe(401);
    const body = r.body as ErrorBody;
    expect(body.error).toMatchObject({ code, type: 'authentication_error', param: null });
    expect(body.error.message).toBeTruthy();
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('refuses before reading the body: a bad key with broken JSON is still 401', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, '{not json', undefined, { authorization: 'Bearer nope' });
    expect(r.status).toBe(401);
  });

  it('stores keys hashed: only the prefix is readable', async () => {
    const rec = await t.gateway.store.findApiKey(t.key.slice(0, 11));
    expect(rec?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rec?.hash).not.toContain(t.key.slice(11));
    expect(JSON.stringify(rec)).not.toContain(t.key);
  });

  it('a revoked key stops working once the one-second key cache expires', async () => {
    const { key: k2 } = await t.org('auth-org-2', '1');
    expect((await call({ authorization: `Bearer ${k2}` })).status).toBe(200);
    await revokeKey(t.gateway.store, k2.slice(0, 11));
    clock += 1001;
    const r = await call({ authorization: `Bearer ${k2}` });
    expect(r.status).toBe(401);
    expect((r.body as ErrorBody).error.code).toBe('invalid_api_key');
  });

  it('logs refused requests too, without an org', async () => {
    const r = await call({});
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 401, errorCode: 'missing_api_key', orgId: null, costMicros: 0 });
  });
});
