import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import type { LimitSpec } from '../src/model/limits.js';
import { openStore } from '../src/store/index.js';
import type { Store } from '../src/store/types.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { killAll } from './cli-helpers.js';
import { pgQuery, roundRobin, sharedPostgresSchema, startFleet, startPrivateRedis, type Fleet, type PrivateRedis } from './fleet.js';
import { tempDir } from './harness.js';

/*
 * Limits across instances (issue 13): three gateway processes on one PostgreSQL schema
 * and a private Redis (which one test kills and restarts). Every count is exact; every
 * load loop is bounded.
 */
let sim: Simulator;
let redis: PrivateRedis;
let db: { url: string; drop(): Promise<void> };
let fleet: Fleet;
let store: Store;

beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
  redis = await startPrivateRedis();
  db = sharedPostgresSchema('limits');
  fleet = await startFleet({
    n: 3, dir: tempDir('tollgate-limits-fleet-'), simUrl: sim.url, databaseUrl: db.url, redisUrl: redis.url,
    // Counts here are exact only while every limits call gets its answer: on a loaded CI machine a
    // Redis reply can take longer than the default 500 ms, and a request then fails open.
    yaml: { log: { level: 'warn', flush_interval_ms: 50 }, metrics: { port: 0 }, redis: { url: redis.url, timeout_ms: 5000 } },
  });
  store = openStore(db.url);
}, 180_000);
afterAll(async () => {
  await fleet?.stop();
  await killAll();
  await store?.close();
  await redis?.stop();
  await db?.drop();
  await sim?.close();
});

const CHAT = 'POST /openai/v1/chat/completions';
const simCalls = (): number => sim.calls()[CHAT] ?? 0;

interface Reply { status: number; headers: Headers; body: { error?: { code: string }; usage?: { cost_usd_total: number } } }
async function chat(url: string, key: string, content: string, maxTokens = 20): Promise<Reply> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', signal: AbortSignal.timeout(20_000),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: maxTokens }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] };
}

let orgs = 0;
async function keyWith(limits: LimitSpec): Promise<{ key: string; keyId: string; orgId: string }> {
  const org = await createOrg(store, `fleet-lim-${++orgs}`, '5', 'standard');
  const { key, record } = await createKey(store, org.name, { limits });
  return { key, keyId: record.id, orgId: org.id };
}

/** Waits (bounded) for the instances to write every log row of the key, then returns its rows' sum and the org's balance. */
async function settled(keyId: string, orgId: string, requests: number): Promise<{ logged: number; balance: number; rows: number }> {
  let row = { n: '0', logged: '0' };
  for (let i = 0; i < 200 && Number(row.n) < requests; i++) {
    [row] = await pgQuery<{ n: string; logged: string }>(db.url, 'SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS logged FROM request_logs WHERE api_key_id = $1', [keyId]) as [typeof row];
    if (Number(row.n) < requests) await new Promise((r) => setTimeout(r, 50));
  }
  const [org] = await pgQuery<{ balance: string }>(db.url, 'SELECT balance_micros AS balance FROM orgs WHERE id = $1', [orgId]);
  return { logged: Number(row.logged), balance: Number(org!.balance), rows: Number(row.n) };
}

describe('limits over three instances sharing PostgreSQL and Redis', () => {
  it('rpm=30: of 90 requests round-robin over three instances exactly 30 are served; the 429s carry the headers and cost nothing', async () => {
    const { key, keyId, orgId } = await keyWith({ rpm: 30 });
    const before = simCalls();
    const replies = await roundRobin(fleet.urls(), 90, 9, (url, i) => chat(url, key, `rpm ${i}`));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(30);
    const refused = replies.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(60);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.body.error?.code).toBe('rate_limit_exceeded');
      expect(r.headers.get('x-ratelimit-limit-requests')).toBe('30');
      expect(r.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // Remaining goes down across instances: the served requests saw 29, 28, …, 0 (each once).
    const remaining = replies.filter((r) => r.status === 200).map((r) => Number(r.headers.get('x-ratelimit-remaining-requests'))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(simCalls() - before).toBe(30);
    const { logged, balance, rows } = await settled(keyId, orgId, 90);
    expect(rows).toBe(90);
    const [refusedCost] = await pgQuery<{ n: string; cost: string }>(db.url,
      "SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS cost FROM request_logs WHERE api_key_id = $1 AND error_code = 'rate_limit_exceeded'", [keyId]);
    expect(refusedCost).toEqual({ n: '60', cost: '0' });
    expect(5_000_000 - balance).toBe(logged);
  }, 120_000);

  it('a $0.01 budget under 200 concurrent requests over three instances never spends more than $0.01', async () => {
    const { key, keyId, orgId } = await keyWith({ budget: { micros: 10_000, period: 'month' } });
    // Each request may cost up to ~300 µUSD (500 output tokens of gpt-4o-mini) and does: about 30 fit in the budget.
    const replies = await roundRobin(fleet.urls(), 200, 200, (url, i) => chat(url, key, `budget ${i} [[sim:tokens=500]]`, 500));
    const served = replies.filter((r) => r.status === 200);
    expect(served.length).toBeGreaterThan(0);
    for (const r of replies.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(429);
      expect(r.body.error?.code).toBe('budget_exceeded');
    }
    const { logged, balance, rows } = await settled(keyId, orgId, 200);
    expect(rows).toBe(200);
    expect(logged).toBeGreaterThan(0);
    expect(logged).toBeLessThanOrEqual(10_000);
    expect(5_000_000 - balance).toBe(logged);
    const servedCost = served.reduce((sum, r) => sum + Math.round((r.body.usage?.cost_usd_total ?? 0) * 1e6), 0);
    expect(servedCost).toBe(logged);
  }, 120_000);

  it('Redis killed mid-run: rate limits fail open with a warning metric, budgets answer 503 limits_unavailable; back to normal when Redis returns', async () => {
    const rpmKey = await keyWith({ rpm: 10_000 });
    const budgetKey = await keyWith({ budget: { micros: 1_000_000, period: 'day' } });
    expect((await chat(fleet.urls()[0]!, budgetKey.key, 'before')).status).toBe(200);

    // A bounded load on the rate-limited key, with Redis killed once a third of it is done.
    let done = 0;
    const load = roundRobin(fleet.urls(), 60, 3, async (url, i) => {
      const r = await chat(url, rpmKey.key, `mid-run ${i}`);
      done++;
      return r;
    });
    for (let i = 0; i < 400 && done < 20; i++) await new Promise((r) => setTimeout(r, 25));
    await redis.kill();
    const during = await load;
    expect(during.map((r) => r.status)).toEqual(new Array(60).fill(200));

    for (const url of fleet.urls()) {
      const open = await chat(url, rpmKey.key, 'fail open');
      expect(open.status).toBe(200);
      expect(open.headers.get('x-ratelimit-limit-requests')).toBe('10000');
      expect(open.headers.get('x-ratelimit-remaining-requests')).toBeNull(); // the count is unknown while Redis is away
      const closed = await chat(url, budgetKey.key, 'fail closed');
      expect(closed.status).toBe(503);
      expect(closed.body.error?.code).toBe('limits_unavailable');
      expect(closed.headers.get('retry-after')).toBe('1');
    }
    const metrics = await Promise.all(fleet.instances.map(async (s) => {
      const url = /Prometheus metrics on (\S+)/.exec(s.stdout())?.[1];
      expect(url).toBeDefined();
      return (await fetch(url!)).text();
    }));
    for (const text of metrics) {
      expect(Number(/^tollgate_limits_degraded_total\{kind="rpm"\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
      expect(Number(/^tollgate_limits_degraded_total\{kind="budget"\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
    }
    expect(fleet.instances.some((s) => s.stdout().includes('limits store (Redis) unavailable'))).toBe(true);

    await redis.start();
    let unavailable = fleet.urls().length;
    for (const url of fleet.urls()) {
      let r = await chat(url, budgetKey.key, 'back');
      for (let i = 0; i < 100 && r.status !== 200; i++) {
        expect(r.body.error?.code).toBe('limits_unavailable'); // until this instance's client has reconnected
        unavailable++;
        await new Promise((res) => setTimeout(res, 100));
        r = await chat(url, budgetKey.key, 'back');
      }
      expect(r.status).toBe(200);
      const counted = await chat(url, rpmKey.key, 'counted again');
      expect(counted.status).toBe(200);
      expect(counted.headers.get('x-ratelimit-remaining-requests')).not.toBeNull();
    }
    // The 503s cost nothing; the budget key's spend is what its served requests logged.
    const [row] = await pgQuery<{ n: string; cost: string }>(db.url,
      "SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS cost FROM request_logs WHERE api_key_id = $1 AND error_code = 'limits_unavailable'", [budgetKey.keyId]);
    expect(row).toEqual({ n: String(unavailable), cost: '0' });
  }, 120_000);
});
