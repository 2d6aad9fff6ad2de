import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { chatMicros, post, readSse, settledBalance, simPromptTokens } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, logRow, postJson, tempDir } from './harness.js';

/**
 * Routing: a model id maps to every provider route that serves it (file-name order);
 * `provider/model` pins one. Before any byte reached the client, a connection error
 * or a 5xx moves on to the next route when the endpoint allows `fallback:`; after the
 * first byte, never. The log row lists every attempt.
 */

const provider = (id: string, baseUrl: string, endpoint: string, models: string, auth = '{ header: Authorization, format: "Bearer {key}" }') => `
id: ${id}
name: ${id}
base_url: ${baseUrl}
auth: ${auth}
endpoints:
  chat: ${endpoint}
models:
${models}`;

const t = useOrgGateway('routing', '5', (sim) => {
  const dir = copyProviders(tempDir());
  // A second Anthropic route for claude-haiku-4-5 (after anthropic.yaml), at its own prices.
  writeFileSync(join(dir, 'backup.yaml'), provider('backup', `${sim.url}/backup/v1`,
    '{ path: /messages, dialect: anthropic-messages, retry: { attempts: 1 }, fallback: true }',
    '  - { id: claude-haiku-4-5, upstream_id: claude-haiku-4-5-20251001, modality: chat, max_output_tokens: 1000, pricing: { prompt: "0.000002", completion: "0.00001" } }'));
  // gpt-4o-mini served second by a Gemini-dialect relay: a fallback crosses dialects.
  writeFileSync(join(dir, 'relay.yaml'), provider('relay', `${sim.url}/relay/v1beta`,
    '{ path: "/models/{model}:{action}", dialect: gemini, fallback: true }',
    '  - { id: gpt-4o-mini, upstream_id: gemini-2.5-flash, modality: chat, max_output_tokens: 1000, pricing: { prompt: "0.0000003", completion: "0.0000025" } }',
    '{ header: x-goog-api-key, format: "{key}" }'));
  // twin: a dead host first, a live one second. strict: the first route forbids fallback.
  writeFileSync(join(dir, 'a-dead.yaml'), provider('dead', 'http://127.0.0.1:1/v1', '{ path: /chat/completions, dialect: openai, fallback: true }',
    '  - { id: twin, modality: chat, max_output_tokens: 100, pricing: { prompt: "0.000001", completion: "0.000002" } }'));
  writeFileSync(join(dir, 'b-live.yaml'), provider('live', `${sim.url}/live/v1`, '{ path: /chat/completions, dialect: openai, fallback: true }',
    '  - { id: twin, modality: chat, max_output_tokens: 100, pricing: { prompt: "0.000001", completion: "0.000002" } }\n  - { id: strict, modality: chat, max_output_tokens: 100, pricing: { prompt: "0.000001", completion: "0.000002" } }'));
  writeFileSync(join(dir, 'a-strict.yaml'), provider('strictp', `${sim.url}/strictp/v1`, '{ path: /chat/completions, dialect: openai, fallback: false }',
    '  - { id: strict, modality: chat, max_output_tokens: 100, pricing: { prompt: "0.000001", completion: "0.000002" } }'));
  return {
    providersDir: dir,
    yaml: { providers: Object.fromEntries(['backup', 'relay', 'dead', 'live', 'strictp'].map((id) => [id, { api_key: 'sim-key' }])) },
  };
}, { ledger: true });

const calls = (route: string): number => t.sim.calls()[route] ?? 0;
const ANTHROPIC = 'POST /anthropic/v1/messages';
const BACKUP = 'POST /backup/v1/messages';
const chat = (model: string, content: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 50, messages: [{ role: 'user', content }], ...extra });

describe('fallback before the first byte', () => {
  it('moves on to the next route after the first one fails with 5xx (its retries spent), billed at the serving route\'s prices', async () => {
    const before = await t.balance(t.orgId);
    const [a, b] = [calls(ANTHROPIC), calls(BACKUP)];
    const content = 'Hi [[sim@anthropic:status=500]]';
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('claude-haiku-4-5', content), t.key);
    expect(r.status).toBe(200);
    expect([calls(ANTHROPIC) - a, calls(BACKUP) - b]).toEqual([2, 1]); // anthropic's retry policy: 2 attempts
    const cost = chatMicros({ prompt: '2', completion: '10' }, { prompt: simPromptTokens(content), completion: 8 });
    expect(Math.round((r.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total * 1e6)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'backup', status: 200, costMicros: cost });
    expect(row.attempts.map((x) => [x.provider, x.status])).toEqual([['anthropic', 500], ['anthropic', 500], ['backup', 200]]);
  });

  it('falls back on a stream too, since nothing was sent yet', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/chat/completions`, chat('claude-haiku-4-5', 'Hi [[sim@anthropic:status=503]]', { stream: true }), t.key);
    const events = await readSse(res);
    expect(events.at(-1)?.data).toBe('[DONE]');
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row.usedProvider).toBe('backup');
    expect(row.attempts.map((x) => [x.provider, x.status])).toEqual([['anthropic', 503], ['anthropic', 503], ['backup', 200]]);
    expect(before - (await settledBalance(t, t.orgId, before - row.costMicros))).toBe(row.costMicros);
    expect(row.costMicros).toBeGreaterThan(0);
  });

  it('crosses dialects: an OpenAI route failing falls back to a Gemini-dialect route, translated', async () => {
    const relay = calls('POST /relay/v1beta/models/gemini-2.5-flash:generateContent');
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('gpt-4o-mini', 'Hi [[sim@openai:status=502]]'), t.key);
    expect(r.status).toBe(200);
    expect((r.body as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe('This is a simulated reply. This is a');
    expect(calls('POST /relay/v1beta/models/gemini-2.5-flash:generateContent')).toBe(relay + 1);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'relay', usedModel: 'gemini-2.5-flash' });
    expect(row.attempts.map((x) => [x.provider, x.status])).toEqual([['openai', 502], ['openai', 502], ['relay', 200]]);
  });

  it('moves on after a connection error, recording it', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('twin', 'Hi'), t.key);
    expect(r.status).toBe(200);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.usedProvider).toBe('live');
    expect(row.attempts).toEqual([
      expect.objectContaining({ provider: 'dead', status: null, error: expect.stringMatching(/connection failed/) as unknown as string }),
      expect.objectContaining({ provider: 'live', status: 200, error: null }),
    ]);
  });
});

describe('no fallback', () => {
  it('after the first byte: a stream that breaks ends with an error event and the next route is never called', async () => {
    const before = await t.balance(t.orgId);
    const [a, b] = [calls(ANTHROPIC), calls(BACKUP)];
    const res = await post(`${t.url}/v1/chat/completions`, chat('claude-haiku-4-5', 'Hi [[sim@anthropic:drop_mid_stream]]', { stream: true }), t.key);
    const events = await readSse(res);
    expect(JSON.parse(events.at(-1)?.data ?? '{}')).toMatchObject({ error: { code: 'upstream_error', usedProvider: 'anthropic' } });
    expect([calls(ANTHROPIC) - a, calls(BACKUP) - b]).toEqual([1, 0]);
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row.attempts.map((x) => [x.provider, x.status])).toEqual([['anthropic', 200]]);
    expect(row).toMatchObject({ usedProvider: 'anthropic', errorCode: 'upstream_error', costEstimated: true });
    expect(before - (await settledBalance(t, t.orgId, before - row.costMicros))).toBe(row.costMicros);
  });

  it('on a 4xx: the request itself is wrong, another route would refuse it too', async () => {
    const b = calls(BACKUP);
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] }, t.key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'gateway_error', usedProvider: 'anthropic' });
    expect(calls(BACKUP)).toBe(b);
  });

  it('when the failing route\'s endpoint sets fallback: false', async () => {
    const live = calls('POST /live/v1/chat/completions');
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('strict', 'Hi [[sim:status=500]]'), t.key);
    expect(r.status).toBe(502);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'upstream_error', usedProvider: 'strictp', requestedModel: 'strict' });
    expect(calls('POST /live/v1/chat/completions')).toBe(live);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.attempts.map((x) => [x.provider, x.status])).toEqual([['strictp', 500]]);
  });

  it('when every route fails: 502 naming the last provider tried, nothing charged', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('claude-haiku-4-5', 'Hi [[sim:status=500]]'), t.key);
    expect(r.status).toBe(502);
    // claude-haiku-4-5 is served by anthropic, backup and bedrock, tried in file-name order.
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'upstream_error', usedProvider: 'bedrock' });
    expect(await t.balance(t.orgId)).toBe(before);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.attempts.map((x) => x.provider)).toEqual(['anthropic', 'anthropic', 'backup', 'bedrock', 'bedrock']);
  });
});

describe('pinning', () => {
  it('provider/model uses that provider\'s route only', async () => {
    const a = calls(ANTHROPIC);
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('backup/claude-haiku-4-5', 'Hi'), t.key);
    expect(r.status).toBe(200);
    expect(calls(ANTHROPIC)).toBe(a);
    expect((await logRow(t, r.headers.get('x-request-id') ?? '')).usedProvider).toBe('backup');
    const none = await postJson(`${t.url}/v1/chat/completions`, chat('backup/gpt-4o-mini', 'Hi'), t.key);
    expect(none.status).toBe(404);
    expect((none.body as ErrorBody).error.code).toBe('model_not_found');
  });
});
