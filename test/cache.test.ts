import { afterAll, describe, expect, it } from 'vitest';
import type { CacheSetting } from '../src/cache/types.js';
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
    expect(hitRow).toMatchObject({ cache: 'hit', costMicros: 0, cacheSavedMicros: Math.round(firstBody.usage.cost_usd_total * 1e6) });
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
