import { describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import type { ErrorBody } from '../src/lib/errors.js';
import { MAX_LOGGED_MODEL_CHARS, MAX_LOGGED_PROMPT_CHARS } from '../src/pipeline/log-bounds.js';
import { useGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

/*
 * Issue 27, finding 5: a refused request costs its sender nothing, so what the gateway
 * stores of it must be bounded (else any key holder fills the database at ~1 MB per
 * request), and a key's own limits refuse it before the gateway does any other work for it.
 */
const t = useGateway();
const chatUrl = (): string => `${t.url}/v1/chat/completions`;
const code = (r: { body: unknown }): string => (r.body as ErrorBody).error.code;

describe('what a refused request leaves in the request log', () => {
  it('a 200,000-character unknown model id from a $0 key: 404, the row keeps at most 256 characters of it', async () => {
    const { org, key } = await t.org('bounds-model', '0');
    const model = 'm'.repeat(200_000);
    const r = await postJson(chatUrl(), { model, messages: [{ role: 'user', content: 'hi' }] }, key);
    expect(r.status).toBe(404);
    expect(code(r)).toBe('model_not_found');
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect(row.requestedModel?.length).toBe(MAX_LOGGED_MODEL_CHARS); // compared by length: a failure must not print 200,000 characters
    expect(row.requestedModel?.startsWith('mmm')).toBe(true);
    await expectLedgerMatchesLog(t, org.id);
  });

  it('a 900 KB prompt from a $0 key at rpm 0: 429, the row keeps a bounded prompt and says how long it was', async () => {
    const { org } = await t.org('bounds-prompt', '0');
    const { key } = await createKey(t.gateway.store, 'bounds-prompt', { limits: { rpm: 0 } });
    const content = 'p'.repeat(900_000);
    const r = await postJson(chatUrl(), { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }, key);
    expect(r.status).toBe(429);
    expect(code(r)).toBe('rate_limit_exceeded');
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect(row.prompt?.length).toBe(MAX_LOGGED_PROMPT_CHARS);
    expect(row.prompt?.startsWith('ppp')).toBe(true);
    expect(row.extra).toMatchObject({ prompt_chars: 900_000 });
    await expectLedgerMatchesLog(t, org.id);
  });

  it('a prompt within the bound is kept whole, with no note about its length', async () => {
    const { key } = await t.org('bounds-small', '1');
    const r = await postJson(chatUrl(), { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'short prompt' }], max_tokens: 5 }, key);
    expect(r.status).toBe(200);
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect(row.prompt).toBe('short prompt');
    expect(row.extra?.prompt_chars).toBeUndefined();
  });
});

/** A request for a model no provider serves, with the key of a new org whose requests per minute are limited to `rpm`. */
async function unknownModelAtRpm(org: string, rpm: number): Promise<{ key: string; r: Awaited<ReturnType<typeof postJson>> }> {
  await t.org(org, '5');
  const { key } = await createKey(t.gateway.store, org, { limits: { rpm } });
  return { key, r: await postJson(chatUrl(), { model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }, key) };
}

describe('a key over its limits is refused before routing', () => {
  it('a key at rpm 0 asking for an unknown model gets the 429 of its limit, not a 404', async () => {
    const { r } = await unknownModelAtRpm('bounds-rpm', 0);
    expect({ status: r.status, code: code(r), limit: r.headers.get('x-ratelimit-limit-requests') }).toEqual({ status: 429, code: 'rate_limit_exceeded', limit: '0' });
  });

  it('a key within its rpm asking for an unknown model still gets the 404, and the failed request counts for its rpm', async () => {
    const { key, r: first } = await unknownModelAtRpm('bounds-rpm1', 1);
    expect({ status: first.status, code: code(first), remaining: first.headers.get('x-ratelimit-remaining-requests') }).toEqual({ status: 404, code: 'model_not_found', remaining: '0' });
    const second = await postJson(chatUrl(), { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }, key);
    expect(second.status).toBe(429);
  });
});
