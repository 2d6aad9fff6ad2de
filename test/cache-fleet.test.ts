import { describe, expect, it } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import type { CacheSetting } from '../src/model/cache.js';
import { pgQuery, roundRobin } from './fleet.js';
import { fleetSuite } from './fleet-suite.js';

/*
 * The response cache across instances (issue 33): three gateway processes on one
 * PostgreSQL schema and a private Redis. A reply one instance stored is a hit on the
 * other two; another org never sees it; 200 concurrent repeats make no upstream call;
 * with Redis gone the cache is bypassed, requests are still served, and a warning metric
 * counts it. Every org's balance moves by exactly its logged costs.
 */
const suite = fleetSuite({
  schema: 'cache', privateRedis: true, dir: 'tollgate-cache-fleet-', store: true, checkLedgers: true,
  yaml: ({ redis }) => ({ log: { level: 'warn', flush_interval_ms: 50 }, metrics: { port: 0 }, redis: { url: redis, timeout_ms: 1000 } }),
});

const CHAT = 'POST /openai/v1/chat/completions';
const simCalls = (): number => suite.sim.calls()[CHAT] ?? 0;

interface Reply { status: number; cache: string | null; text: string; cost: number | undefined }
async function chat(url: string, key: string, content: string, stream = false): Promise<Reply> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', signal: AbortSignal.timeout(20_000),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 300, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }),
  });
  const raw = await res.text();
  if (!stream) {
    const body = JSON.parse(raw) as { choices?: Array<{ message?: { content?: string } }>; usage?: { cost_usd_total?: number } };
    return { status: res.status, cache: res.headers.get('x-tollgate-cache'), text: body.choices?.[0]?.message?.content ?? '', cost: body.usage?.cost_usd_total };
  }
  let text = '';
  let cost: number | undefined;
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const c = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string } }>; usage?: { cost_usd_total?: number } };
    text += c.choices?.[0]?.delta?.content ?? '';
    if (c.usage) cost = c.usage.cost_usd_total;
  }
  return { status: res.status, cache: res.headers.get('x-tollgate-cache'), text, cost };
}

let orgs = 0;
async function cachedKey(setting: CacheSetting | null): Promise<{ key: string; orgId: string }> {
  const org = await createOrg(suite.store, `fleet-cache-${++orgs}`, '20', 'standard');
  const { key, project } = await createKey(suite.store, org.name);
  await suite.store.tenancy.setCacheSetting(org.id, 'project', project.id, setting);
  return { key, orgId: org.id };
}

async function balance(orgId: string): Promise<number> {
  const [row] = await pgQuery<{ b: string }>(suite.db.url, 'SELECT balance_micros AS b FROM orgs WHERE id = $1', [orgId]);
  return Number(row?.b);
}

describe('the response cache over three instances sharing PostgreSQL and Redis', () => {
  it('a reply stored by one instance is a hit on the other two (JSON and stream); the same request from another org misses', async () => {
    const [u0, u1, u2] = suite.fleet.urls() as [string, string, string];
    const a = await cachedKey({ mode: 'exact' });
    const b = await cachedKey({ mode: 'exact' });
    const prompt = `shared across the fleet ${'words to make it long '.repeat(300)}`;
    const before = simCalls();
    const first = await chat(u0, a.key, prompt);
    expect(first).toMatchObject({ status: 200, cache: 'miss' });
    expect(first.cost).toBeGreaterThan(0);
    const onOne = await chat(u1, a.key, prompt);
    const onTwo = await chat(u2, a.key, prompt, true);
    expect(onOne).toEqual({ status: 200, cache: 'hit', text: first.text, cost: 0 });
    expect(onTwo).toEqual({ status: 200, cache: 'hit', text: first.text, cost: 0 });
    expect(simCalls()).toBe(before + 1);
    const other = await chat(u1, b.key, prompt);
    expect(other.cache).toBe('miss');
    expect(simCalls()).toBe(before + 2);
  });

  it('200 concurrent repeats of 20 stored prompts over the three instances: all hits, no upstream call, nothing charged', async () => {
    const a = await cachedKey({ mode: 'exact' });
    const prompts = Array.from({ length: 20 }, (_, i) => `prompt ${i}: ${'some context '.repeat(200)}`);
    await roundRobin(suite.fleet.urls(), 20, 4, (url, i) => chat(url, a.key, prompts[i]!));
    const calls = simCalls();
    const before = await balance(a.orgId);
    const replies = await roundRobin(suite.fleet.urls(), 200, 200, (url, i) => chat(url, a.key, prompts[i % 20]!, i % 2 === 0));
    expect(replies.filter((r) => r.status === 200 && r.cache === 'hit')).toHaveLength(200);
    expect(simCalls()).toBe(calls);
    expect(await balance(a.orgId)).toBe(before);
    // Every hit is logged: the rows say hit, what they saved, and were charged nothing.
    let rows = { n: '0', saved: '0', cost: '0' };
    for (let i = 0; i < 200 && Number(rows.n) < 220; i++) {
      [rows] = await pgQuery<typeof rows>(suite.db.url, `SELECT COUNT(*) AS n, COALESCE(SUM(cache_saved_micros), 0) AS saved, COALESCE(SUM(cost_micros), 0) AS cost
        FROM request_logs WHERE org_id = $1`, [a.orgId]) as [typeof rows];
      if (Number(rows.n) < 220) await new Promise((r) => setTimeout(r, 50));
    }
    expect(Number(rows.n)).toBe(220);
    expect(Number(rows.saved)).toBeGreaterThan(0);
    const [hits] = await pgQuery<{ n: string; cost: string }>(suite.db.url, "SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS cost FROM request_logs WHERE org_id = $1 AND cache = 'hit'", [a.orgId]);
    expect({ n: Number(hits?.n), cost: Number(hits?.cost) }).toEqual({ n: 200, cost: 0 });
  });

  it('Redis down: the cache is bypassed, requests are still served (and billed), a warning metric and log line say so', async () => {
    const a = await cachedKey({ mode: 'exact' });
    const [u0] = suite.fleet.urls() as [string];
    await chat(u0, a.key, 'before the outage');
    await suite.redis.kill();
    try {
      const calls = simCalls();
      const during = await chat(u0, a.key, 'before the outage');
      expect(during).toMatchObject({ status: 200, cache: 'bypass' });
      expect(during.cost).toBeGreaterThan(0);
      expect(simCalls()).toBe(calls + 1);
      const url = /Prometheus metrics on (\S+)/.exec(suite.fleet.instances[0]!.stdout())?.[1];
      const metrics = await (await fetch(url ?? '')).text();
      expect(Number(/tollgate_cache_degraded_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0);
      expect(metrics).toMatch(/tollgate_cache_requests_total\{result="bypass"\} [1-9]/);
      expect(suite.fleet.instances[0]!.stdout() + suite.fleet.instances[0]!.stderr()).toContain('response cache store (Redis) unavailable');
    } finally {
      await suite.redis.start();
    }
    // Back: the entry stored before the outage (Redis kept nothing: it was killed) is gone; the cache works again.
    let after: Reply | undefined;
    for (let i = 0; i < 50 && after?.cache !== 'miss'; i++) {
      after = await chat(u0, a.key, 'after the outage');
      if (after.cache !== 'miss') await new Promise((r) => setTimeout(r, 100));
    }
    expect(after?.cache).toBe('miss');
    expect((await chat(u0, a.key, 'after the outage')).cache).toBe('hit');
  });
});
