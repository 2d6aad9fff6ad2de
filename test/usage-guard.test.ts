import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { buildMp3, framesForSeconds } from '../simulator/mp3.js';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * An upstream's usage is a number the gateway multiplies by a price: a negative,
 * fractional or absurd count (`[[sim:usage=…]]`) is a malformed reply — 502, nothing
 * charged, a log row at cost 0 — never a negative charge, a negative row or a bill
 * for a quadrillion tokens.
 */
const t = useOrgGateway('garbage-usage', '5', {}, { ledger: true });
const BAD = ['-1000', '2.5', '1e15'];

async function expectMalformed(request: () => Promise<{ status: number; headers: Headers; body: unknown }>): Promise<void> {
  const before = await t.balance(t.orgId);
  const r = await request();
  expect(r.status).toBe(502);
  expect((r.body as ErrorBody).error.code).toBe('upstream_error');
  expect((r.body as ErrorBody).error.message).toMatch(/usage|count|seconds/);
  const row = await logRow(t, r.headers.get('x-request-id') ?? '');
  expect(row).toMatchObject({ status: 502, errorCode: 'upstream_error', costMicros: 0 });
  expect(await t.balance(t.orgId)).toBe(before);
}

describe.each(BAD)('usage reported as %s', (bad) => {
  const marker = `[[sim:usage=${bad}]]`;
  it.each([
    ['OpenAI', 'gpt-4o-mini'], ['Anthropic', 'claude-haiku-4-5'], ['Gemini', 'gemini-2.5-flash'],
  ])('chat from %s → 502, cost 0, logged', async (_p, model) => {
    await expectMalformed(() => postJson(`${t.url}/v1/chat/completions`, { model, max_tokens: 5, messages: [{ role: 'user', content: `hi ${marker}` }] }, t.key));
  });

  it('/v1/messages answered natively by Anthropic → 502, cost 0, logged', async () => {
    await expectMalformed(() => postJson(`${t.url}/v1/messages`, { model: 'claude-haiku-4-5', max_tokens: 5, messages: [{ role: 'user', content: `hi ${marker}` }] }, t.key));
  });

  it.each(['gpt-4o-mini', 'claude-haiku-4-5', 'gemini-2.5-flash'])('a %s stream ends with an error event and is never billed below zero or for the bogus count', async (model) => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/chat/completions`, { model, max_tokens: 5, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: `hi ${marker}` }] }, t.key);
    const events = await readSse(res);
    expect(events.at(-1)?.data).toMatch(/"code":"upstream_error"/);
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row.errorCode).toBe('upstream_error');
    // Billed as any broken stream: the prompt (estimated) and the tokens delivered, a few micro-dollars at most.
    expect(row.costMicros).toBeGreaterThanOrEqual(0);
    expect(row.costMicros).toBeLessThan(100);
    expect(before - (await t.balance(t.orgId))).toBe(row.costMicros);
  });

  it('embeddings → 502, cost 0, logged', async () => {
    await expectMalformed(() => postJson(`${t.url}/v1/embeddings`, { model: 'text-embedding-3-small', input: `hi ${marker}` }, t.key));
  });
});

describe.each(['-5', '-0.5', '1e12'])('audio seconds reported as %s', (bad) => {
  it.each(['whisper-1', 'nova-3'])('a %s transcription → 502, cost 0, logged', async (model) => {
    const form = new FormData();
    form.set('model', model);
    form.set('file', new Blob([new Uint8Array(Buffer.concat([buildMp3(framesForSeconds(2)), Buffer.from(`[[sim:usage=${bad}]]`)]))], { type: 'audio/mpeg' }), 'a.mp3');
    await expectMalformed(async () => {
      const res = await fetch(`${t.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${t.key}` }, body: form });
      return { status: res.status, headers: res.headers, body: await res.json() };
    });
  });
});
