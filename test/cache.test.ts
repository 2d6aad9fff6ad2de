import { afterAll, describe, expect, it } from 'vitest';
import type { CacheSetting } from '../src/model/cache.js';
import { expectEveryLedgerExact, logRow, postJson, startTestGateway, type TestGateway } from './harness.js';

/*
 * The response cache (issue 33, docs/cache.md), exact mode, on one gateway over its
 * in-memory store: one upstream call for two identical requests, hits charged the
 * configured fraction and logged with what they saved, nothing shared across orgs, key
 * order and whitespace ignored, parameters not, stream ↔ JSON replay, TTL, the
 * request's own no-cache / no-store.
 */

const opened: TestGateway[] = [];
afterAll(async () => {
  for (const t of opened) {
    await expectEveryLedgerExact(t);
    await t.close();
  }
});

async function gateway(yaml: Record<string, unknown> = {}, now?: () => number): Promise<TestGateway> {
  const t = await startTestGateway({ yaml: { metrics: { host: '127.0.0.1', port: 0 }, ...yaml }, now });
  opened.push(t);
  return t;
}

/** An org whose default project has the cache setting (set before its key is first used: no key cache to evict). */
async function cachedOrg(t: TestGateway, name: string, setting: CacheSetting | null): Promise<{ orgId: string; key: string; projectId: string }> {
  const { org, key } = await t.org(name, '10');
  const project = await t.gateway.store.tenancy.findProject(org.id, 'default');
  if (!project) throw new Error('no default project');
  await t.gateway.store.tenancy.setCacheSetting(org.id, 'project', project.id, setting);
  return { orgId: org.id, key, projectId: project.id };
}

const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 200, ...extra });
const upstreamCalls = (t: TestGateway): number => t.sim.received().length;

/** The text of an SSE chat stream in OpenAI's format, and its usage chunk. */
async function streamed(url: string, body: unknown, key: string, headers: Record<string, string> = {}): Promise<{ status: number; cache: string | null; text: string; usage: Record<string, unknown> | undefined; id: string | null }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers }, body: JSON.stringify(body) });
  const raw = await res.text();
  let text = '';
  let usage: Record<string, unknown> | undefined;
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string } }>; usage?: Record<string, unknown> };
    text += chunk.choices?.[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
  return { status: res.status, cache: res.headers.get('x-tollgate-cache'), text, usage, id: res.headers.get('x-request-id') };
}

describe('response cache, exact', () => {
  it('two identical requests: one upstream call, the second a hit charged 0, logged with its age and saving; another org misses', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'cache-a', { mode: 'exact' });
    const b = await cachedOrg(t, 'cache-b', { mode: 'exact' });
    const url = `${t.url}/v1/chat/completions`;
    const prompt = `What is a cache? ${'lorem ipsum dolor sit amet '.repeat(400)}`;
    const before = upstreamCalls(t);
    const first = await postJson(url, chat(prompt), a.key);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const balanceAfterMiss = await t.balance(a.orgId);
    const second = await postJson(url, chat(prompt), a.key);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-tollgate-cache')).toBe('hit');
    expect(upstreamCalls(t)).toBe(before + 1);
    const firstBody = first.body as { choices: Array<{ message: { content: string } }>; usage: Record<string, number> };
    const secondBody = second.body as { choices: Array<{ message: { content: string } }>; usage: Record<string, number>; id: string };
    expect(secondBody.choices[0]?.message.content).toBe(firstBody.choices[0]?.message.content);
    expect(secondBody.usage.prompt_tokens).toBe(firstBody.usage.prompt_tokens);
    expect(secondBody.usage.completion_tokens).toBe(firstBody.usage.completion_tokens);
    expect(firstBody.usage.cost_usd_total).toBeGreaterThan(0);
    expect(secondBody.usage.cost_usd_total).toBe(0);
    expect(await t.balance(a.orgId)).toBe(balanceAfterMiss);
    const hitRow = await logRow(t, second.headers.get('x-request-id') ?? '');
    expect(hitRow).toMatchObject({ cache: 'hit', costMicros: 0, cacheSavedMicros: Math.round((firstBody.usage.cost_usd_total ?? 0) * 1e6) });
    expect(hitRow.cacheAgeMs).toBeGreaterThanOrEqual(0);
    expect((await logRow(t, first.headers.get('x-request-id') ?? '')).cache).toBe('miss');
    // The same request from another org: its own miss, its own upstream call.
    const other = await postJson(url, chat(prompt), b.key);
    expect(other.headers.get('x-tollgate-cache')).toBe('miss');
    expect(upstreamCalls(t)).toBe(before + 2);
    const metrics = await (await fetch(t.gateway.metricsUrl ?? '')).text();
    expect(metrics).toMatch(/tollgate_cache_requests_total\{result="hit"\} 1/);
    expect(metrics).toMatch(/tollgate_cache_requests_total\{result="miss"\} 2/);
    expect(metrics).toContain(`tollgate_cache_saved_usd_total ${firstBody.usage.cost_usd_total}`);
  });
});

describe('response cache, exact: keys, replay and directives', () => {
  it('key order and whitespace do not matter; a changed parameter does', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'keys', { mode: 'exact' });
    const url = `${t.url}/v1/chat/completions`;
    const first = await postJson(url, chat('order matters?', { temperature: 0.2 }), a.key);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const reordered = `{ "temperature" : 0.2,\n  "max_tokens": 200, "messages": [ { "content": "order matters?", "role": "user" } ],\n "model": "gpt-4o-mini" }`;
    const again = await postJson(url, reordered, a.key);
    expect(again.headers.get('x-tollgate-cache')).toBe('hit');
    const changed = await postJson(url, chat('order matters?', { temperature: 0.3 }), a.key);
    expect(changed.headers.get('x-tollgate-cache')).toBe('miss');
    const otherMax = await postJson(url, chat('order matters?', { temperature: 0.2, max_tokens: 199 }), a.key);
    expect(otherMax.headers.get('x-tollgate-cache')).toBe('miss');
  });

  it('a non-streamed entry answers a stream and a streamed entry a JSON request, with the same content, in the client format', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'replay', { mode: 'exact' });
    const url = `${t.url}/v1/chat/completions`;
    const json = await postJson(url, chat('tell me a long story about caches'), a.key);
    const jsonText = (json.body as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content ?? '';
    expect(jsonText.length).toBeGreaterThan(20);
    const calls = upstreamCalls(t);
    const asStream = await streamed(url, chat('tell me a long story about caches', { stream: true, stream_options: { include_usage: true } }), a.key);
    expect(asStream).toMatchObject({ status: 200, cache: 'hit', text: jsonText });
    expect(asStream.usage).toMatchObject({ cost_usd_total: 0, prompt_tokens: (json.body as { usage: { prompt_tokens: number } }).usage.prompt_tokens });
    expect(upstreamCalls(t)).toBe(calls);
    // The other way round: stored from a stream, replayed as JSON (and as a stream again).
    const fromStream = await streamed(url, chat('a streamed question', { stream: true }), a.key);
    expect(fromStream.cache).toBe('miss');
    const asJson = await postJson(url, chat('a streamed question'), a.key);
    expect(asJson.headers.get('x-tollgate-cache')).toBe('hit');
    expect((asJson.body as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe(fromStream.text);
    const again = await streamed(url, chat('a streamed question', { stream: true }), a.key);
    expect(again).toMatchObject({ cache: 'hit', text: fromStream.text });
    expect(upstreamCalls(t)).toBe(calls + 1);
    // An Anthropic client's stream replays in Anthropic's events.
    const msgs = `${t.url}/v1/messages`;
    const body = { model: 'gpt-4o-mini', max_tokens: 200, messages: [{ role: 'user', content: 'anthropic format question' }] };
    const m1 = await postJson(msgs, body, a.key);
    expect(m1.headers.get('x-tollgate-cache')).toBe('miss');
    const res = await fetch(msgs, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': a.key }, body: JSON.stringify({ ...body, stream: true }) });
    expect(res.headers.get('x-tollgate-cache')).toBe('hit');
    const raw = await res.text();
    const text = raw.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { type: string; delta?: { text?: string } })
      .filter((e) => e.type === 'content_block_delta').map((e) => e.delta?.text ?? '').join('');
    expect(text).toBe((m1.body as { content: Array<{ text: string }> }).content[0]?.text);
    expect(raw).toContain('event: message_stop');
  });

  it('a hit is charged hit_price of the original cost; the ledger agrees with the log', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'half', { mode: 'exact', hit_price: 0.5 });
    const url = `${t.url}/v1/chat/completions`;
    const prompt = `price me ${'x '.repeat(3000)}`;
    const miss = await postJson(url, chat(prompt), a.key);
    const before = await t.balance(a.orgId);
    const hit = await postJson(url, chat(prompt), a.key);
    expect(hit.headers.get('x-tollgate-cache')).toBe('hit');
    const full = (miss.body as { usage: { cost_usd_input: number; cost_usd_output: number } }).usage;
    const charged = Math.floor(full.cost_usd_input * 1e6 * 0.5) + Math.floor(full.cost_usd_output * 1e6 * 0.5);
    expect(charged).toBeGreaterThan(0);
    expect(Math.round((hit.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total * 1e6)).toBe(charged);
    expect(before - (await t.balance(a.orgId))).toBe(charged);
    expect(await logRow(t, hit.headers.get('x-request-id') ?? '')).toMatchObject({ cache: 'hit', costMicros: charged });
  });

  it('TTL: an entry older than ttl_s misses; ttl=<s> on the request bounds what it reads', async () => {
    let clock = Date.now();
    const t = await gateway({}, () => clock);
    const a = await cachedOrg(t, 'ttl', { mode: 'exact', ttl_s: 60 });
    const url = `${t.url}/v1/chat/completions`;
    await postJson(url, chat('ttl question'), a.key);
    clock += 30_000;
    expect((await postJson(url, chat('ttl question'), a.key, { 'x-tollgate-cache': 'ttl=10' })).headers.get('x-tollgate-cache')).toBe('miss');
    expect((await postJson(url, chat('ttl question'), a.key)).headers.get('x-tollgate-cache')).toBe('hit');
    // Past the ttl_s it was stored with (checked on the gateway clock as well as by the store).
    clock += 61_000;
    expect((await postJson(url, chat('ttl question'), a.key)).headers.get('x-tollgate-cache')).toBe('miss');
  });

  it('no-store reads and writes nothing; no-cache skips the read and still writes; cache-control no-store is honoured; n > 1 and high temperatures bypass', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'directives', { mode: 'exact' });
    const url = `${t.url}/v1/chat/completions`;
    const calls = upstreamCalls(t);
    const h = async (body: unknown, headers: Record<string, string> = {}) => (await postJson(url, body, a.key, headers)).headers.get('x-tollgate-cache');
    expect(await h(chat('q1'), { 'x-tollgate-cache': 'no-store' })).toBe('bypass');
    expect(await h(chat('q1'))).toBe('miss'); // nothing was stored
    expect(await h(chat('q1'), { 'x-tollgate-cache': 'no-cache' })).toBe('miss'); // not read, written again
    expect(await h(chat('q1'))).toBe('hit');
    expect(await h(chat('q1'), { 'cache-control': 'no-store' })).toBe('bypass');
    expect(upstreamCalls(t)).toBe(calls + 4);
    expect(await h(chat('q2', { n: 2 }))).toBe('bypass');
    expect(await h(chat('q2', { n: 2 }))).toBe('bypass');
    expect(await h(chat('q3', { temperature: 1.5 }))).toBe('bypass');
    const toolTurn = { model: 'gpt-4o-mini', max_tokens: 50, messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny', cacheable: false },
    ] };
    expect(await h(toolTurn)).toBe('bypass');
    const row = await logRow(t, (await postJson(url, chat('q3', { temperature: 1.5 }), a.key)).headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ cache: 'bypass', extra: expect.objectContaining({ cache_bypass: 'temperature above 1' }) });
    // A project that says cache_all caches them too.
    const all = await cachedOrg(t, 'all', { mode: 'exact', cache_all: true });
    expect((await postJson(url, chat('q2', { n: 2 }), all.key)).headers.get('x-tollgate-cache')).toBe('miss');
    expect((await postJson(url, chat('q2', { n: 2 }), all.key)).headers.get('x-tollgate-cache')).toBe('hit');
  });

  it('off by default: no header, no cache columns, every request goes upstream', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'off', null);
    const url = `${t.url}/v1/chat/completions`;
    const calls = upstreamCalls(t);
    const r1 = await postJson(url, chat('same'), a.key);
    await postJson(url, chat('same'), a.key);
    expect(r1.headers.get('x-tollgate-cache')).toBeNull();
    expect(upstreamCalls(t)).toBe(calls + 2);
    expect((await logRow(t, r1.headers.get('x-request-id') ?? '')).cache ?? null).toBeNull();
  });
});

describe('response cache, exact: embeddings, moderations, speech', () => {
  it('each modality answers a repeated request from the cache, charged 0, the same reply', async () => {
    const t = await gateway();
    const a = await cachedOrg(t, 'modalities', { mode: 'exact' });
    const calls = upstreamCalls(t);
    const emb = { model: 'text-embedding-3-small', input: ['cache me', 'and me'], dimensions: 64 };
    const e1 = await postJson(`${t.url}/v1/embeddings`, emb, a.key);
    const e2 = await postJson(`${t.url}/v1/embeddings`, { input: ['cache me', 'and me'], dimensions: 64, model: 'text-embedding-3-small' }, a.key);
    expect([e1.headers.get('x-tollgate-cache'), e2.headers.get('x-tollgate-cache')]).toEqual(['miss', 'hit']);
    expect((e2.body as { data: unknown }).data).toEqual((e1.body as { data: unknown }).data);
    expect((e2.body as { usage: unknown }).usage).toMatchObject({ prompt_tokens: (e1.body as { usage: { prompt_tokens: number } }).usage.prompt_tokens, cost: 0 });
    const other = await postJson(`${t.url}/v1/embeddings`, { ...emb, dimensions: 32 }, a.key);
    expect(other.headers.get('x-tollgate-cache')).toBe('miss');
    const mod = { model: 'omni-moderation-latest', input: 'is this fine?' };
    const m1 = await postJson(`${t.url}/v1/moderations`, mod, a.key);
    const m2 = await postJson(`${t.url}/v1/moderations`, mod, a.key);
    expect([m1.headers.get('x-tollgate-cache'), m2.headers.get('x-tollgate-cache')]).toEqual(['miss', 'hit']);
    expect((m2.body as { results: unknown }).results).toEqual((m1.body as { results: unknown }).results);
    const speech = { model: 'tts-1', input: 'Hello from the cache. '.repeat(50), voice: 'alloy' };
    const s1 = await fetch(`${t.url}/v1/audio/speech`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${a.key}` }, body: JSON.stringify(speech) });
    const audio1 = Buffer.from(await s1.arrayBuffer());
    const s2 = await fetch(`${t.url}/v1/audio/speech`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${a.key}` }, body: JSON.stringify(speech) });
    const audio2 = Buffer.from(await s2.arrayBuffer());
    expect([s1.headers.get('x-tollgate-cache'), s2.headers.get('x-tollgate-cache')]).toEqual(['miss', 'hit']);
    expect(s2.headers.get('content-type')).toBe(s1.headers.get('content-type'));
    expect(audio1.length).toBeGreaterThan(1000);
    expect(audio2.equals(audio1)).toBe(true);
    expect(upstreamCalls(t)).toBe(calls + 4);
    const row = await logRow(t, s2.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ cache: 'hit', costMicros: 0, modality: 'speech' });
    expect(row.cacheSavedMicros).toBeGreaterThan(0);
  });
});

describe('response cache and limits', () => {
  it('a hit counts for rpm (it is a request) but not for tpm, and for the budget only what it is charged', async () => {
    const t = await gateway();
    const { org, key } = await t.org('limited', '10');
    const project = await t.gateway.store.tenancy.findProject(org.id, 'default');
    await t.gateway.store.tenancy.setCacheSetting(org.id, 'project', project?.id ?? '', { mode: 'exact', hit_price: 0.5 });
    const [record] = await t.gateway.store.tenancy.listKeys(org.id);
    await t.gateway.store.limits.setKeyLimits(org.id, record!.id, { rpm: 4, tpm: 1_000_000, budget: { micros: 1_000_000, period: 'month' } });
    const url = `${t.url}/v1/chat/completions`;
    const miss = await postJson(url, chat('limits and the cache'), key);
    expect(miss.headers.get('x-tollgate-cache')).toBe('miss');
    const scope = { id: `key:${record!.id}`, limits: { rpm: 4, tpm: 1_000_000, budget: { micros: 1_000_000, period: 'month' as const } }, label: 'key' };
    const afterMiss = await t.gateway.limiter.usage(scope);
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await postJson(url, chat('limits and the cache'), key));
    expect(hits.map((h) => h.headers.get('x-tollgate-cache'))).toEqual(['hit', 'hit', 'hit']);
    const afterHits = await t.gateway.limiter.usage(scope);
    expect(afterHits.rpm?.used).toBe(4);
    expect(afterHits.tpm?.used).toBe(afterMiss.tpm?.used);
    expect(afterMiss.tpm?.used).toBeGreaterThan(0);
    const charged = hits.reduce((n, h) => n + Math.round((h.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total * 1e6), 0);
    expect((afterHits.budget?.spentMicros ?? 0) - (afterMiss.budget?.spentMicros ?? 0)).toBe(charged);
    // The fifth request in the minute is refused by rpm, hit or not.
    expect((await postJson(url, chat('limits and the cache'), key)).status).toBe(429);
  });
});
