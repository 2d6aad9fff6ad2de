import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * What Claude Code sends on /v1/messages beyond the basics (issue 26): system messages
 * in the middle of `messages` (with a beta header), served by every chat model — Claude
 * as written, the others translated — and checked on what the upstream received; and
 * token counting (`POST /v1/messages/count_tokens`, the SDK's messages.countTokens).
 */

const t = useOrgGateway('claude-code', '5', {}, { ledger: true });
const REPLY = 'This is a simulated reply. This is a';
const BETA = 'mid-conversation-system-clear-at-2026-08-21';

const MESSAGES = [
  { role: 'user', content: 'Hello there' },
  { role: 'assistant', content: 'Hi.' },
  { role: 'system', content: [{ type: 'text', text: 'From now on, answer in French.' }] },
  { role: 'user', content: 'How are you?' },
];
const body = (model: string, stream: boolean) => ({ model, max_tokens: 100, system: 'Be brief.', messages: MESSAGES, ...(stream ? { stream: true } : {}) });

interface Upstream { route: string; headers: Record<string, string>; json: Record<string, unknown> }
/** The gateway's call to the simulator for the request just made (the latest call). */
function lastUpstream(): Upstream {
  const call = t.sim.received().at(-1);
  if (!call) throw new Error('the simulator received nothing');
  return { route: call.route, headers: call.headers, json: JSON.parse(call.body) as Record<string, unknown> };
}

/** What each provider must have received: the mid-conversation system message, in its dialect's terms. */
const EXPECTED: Record<string, (u: Upstream) => void> = {
  'claude-haiku-4-5': (u) => {
    expect(u.route).toMatch(/\/v1\/messages$/);
    expect(u.json.messages).toEqual(MESSAGES); // as the client sent it
    expect(u.json.system).toBe('Be brief.');
    expect(u.headers['anthropic-beta']).toBe(BETA);
  },
  'gpt-4o-mini': (u) => {
    // OpenAI takes system messages anywhere: it stays where it was.
    expect(u.json.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: 'Hi.' },
      { role: 'system', content: 'From now on, answer in French.' },
      { role: 'user', content: 'How are you?' },
    ]);
    expect(u.headers['anthropic-beta']).toBeUndefined();
  },
  'gemini-2.5-flash': (u) => {
    // Gemini has only systemInstruction: it is appended there (as LiteLLM does), the turns stay user/model.
    expect(u.json.systemInstruction).toEqual({ parts: [{ text: 'Be brief.\n\nFrom now on, answer in French.' }] });
    expect((u.json.contents as Array<{ role: string }>).map((c) => c.role)).toEqual(['user', 'model', 'user']);
  },
};

describe.each(Object.keys(EXPECTED))('a mid-conversation system message to %s', (model) => {
  it('answers 200 (not streamed), the upstream got it in its own terms', async () => {
    const res = await post(`${t.url}/v1/messages`, body(model, false), t.key, { 'anthropic-beta': BETA, 'anthropic-version': '2023-06-01' });
    const json = await res.json() as { content: unknown };
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.content).toEqual([{ type: 'text', text: REPLY }]);
    EXPECTED[model]!(lastUpstream());
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row.prompt).toContain('From now on, answer in French.');
  });

  it('answers 200 streamed, the upstream got it in its own terms', async () => {
    const res = await post(`${t.url}/v1/messages`, body(model, true), t.key, { 'anthropic-beta': BETA, 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.map((e) => e.event).slice(-2)).toEqual(['message_delta', 'message_stop']);
    const upstream = lastUpstream();
    EXPECTED[model]!(upstream);
    if (model === 'gpt-4o-mini') expect(upstream.json.stream).toBe(true);
  });
});

describe('POST /v1/messages/count_tokens', () => {
  const sdk = (key = t.key) => new Anthropic({ apiKey: key, baseURL: t.url, maxRetries: 0 });
  const request = (model: string) => ({ model, system: 'Be brief.', messages: [{ role: 'user' as const, content: 'Hello there' }] });

  it('counts a Claude request at the provider: the same input_tokens /v1/messages then reports, free, logged at $0', async () => {
    const before = await t.balance(t.orgId);
    const calls = t.sim.received().length;
    const { data: count, response } = await sdk().messages.countTokens(request('claude-haiku-4-5')).withResponse();
    expect(count).toEqual({ input_tokens: 8 });
    const upstream = t.sim.received().slice(calls);
    expect(upstream.map((c) => c.route)).toEqual([expect.stringMatching(/\/v1\/messages\/count_tokens$/)]);
    expect(JSON.parse(upstream[0]!.body)).toEqual({ ...request('claude-haiku-4-5'), model: 'claude-haiku-4-5-20251001' });
    expect(await t.balance(t.orgId)).toBe(before);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ modality: 'chat', requestedModel: 'claude-haiku-4-5', usedProvider: 'anthropic', status: 200, costMicros: 0, extra: { count_tokens: true, input_tokens: 8 } });
    const msg = await sdk().messages.create({ ...request('claude-haiku-4-5'), max_tokens: 20 });
    expect(msg.usage.input_tokens).toBe(count.input_tokens);
  });

  it.each([['gpt-4o-mini', 'openai'], ['gemini-2.5-flash', 'google']])('estimates for %s without any upstream call, free, logged at $0', async (model, provider) => {
    const before = await t.balance(t.orgId);
    const calls = t.sim.received().length;
    const { data: count, response } = await sdk().messages.countTokens(request(model)).withResponse();
    // 'Be brief.\nHello there' (21 characters) at ~4 a token.
    expect(count).toEqual({ input_tokens: 6 });
    expect(t.sim.received().length).toBe(calls);
    expect(await t.balance(t.orgId)).toBe(before);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ modality: 'chat', requestedModel: model, usedProvider: provider, status: 200, costMicros: 0, extra: { count_tokens: true, input_tokens: 6, estimated: true } });
  });

  it('counts declared tools in an estimate', async () => {
    const tools = [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const count = await sdk().messages.countTokens({ ...request('gpt-4o-mini'), tools });
    expect(count.input_tokens).toBe(6 + Math.ceil(JSON.stringify(tools).length / 4));
  });

  it('takes x-api-key as well as Bearer, and a mid-conversation system message', async () => {
    const r = await postJson(`${t.url}/v1/messages/count_tokens`, { model: 'claude-haiku-4-5', messages: MESSAGES }, undefined, { 'x-api-key': t.key, 'anthropic-beta': BETA });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ input_tokens: Math.ceil('Hello thereHi.From now on, answer in French.How are you?'.length / 4) + 3 * 4 });
    expect(t.sim.received().at(-1)?.headers['anthropic-beta']).toBe(BETA);
  });

  it('answers errors in Anthropic\'s shape: no key 401, unknown model 404, bad body 400, upstream 5xx 502', async () => {
    expect(await sdk('tg_wrong').messages.countTokens(request('claude-haiku-4-5')).catch((e: unknown) => e)).toBeInstanceOf(Anthropic.AuthenticationError);
    const unknown = await postJson(`${t.url}/v1/messages/count_tokens`, request('claude-0'), t.key);
    expect(unknown).toMatchObject({ status: 404, body: { type: 'error', error: { type: 'not_found_error', code: 'model_not_found', param: 'model' } } });
    const bad = await postJson(`${t.url}/v1/messages/count_tokens`, { model: 'gpt-4o-mini', messages: [] }, t.key);
    expect(bad).toMatchObject({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request', param: 'messages' } } });
    const before = await t.balance(t.orgId);
    // Pinned: unpinned, the count falls back to bedrock's route, which has no count endpoint: the gateway's estimate answers.
    const down = await postJson(`${t.url}/v1/messages/count_tokens`, { model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'x [[sim:status=500]]' }] }, t.key);
    expect(down).toMatchObject({ status: 502, body: { type: 'error', error: { type: 'api_error', code: 'upstream_error', usedProvider: 'anthropic' } } });
    const fellBack = await postJson(`${t.url}/v1/messages/count_tokens`, { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'x [[sim:status=500]]' }] }, t.key);
    expect(fellBack).toMatchObject({ status: 200, body: { input_tokens: expect.any(Number) as number } });
    expect(await t.balance(t.orgId)).toBe(before);
  });
});
