import { describe, expect, it } from 'vitest';
import { pgQuery, roundRobin } from './fleet.js';
import { chatReply as chat, fleetSuite, keyMaker, logSettled } from './fleet-suite.js';

/*
 * Limits across instances (issue 13): three gateway processes on one PostgreSQL schema
 * and a private Redis (which one test kills and restarts). Every count is exact; every
 * load loop is bounded.
 */
const suite = fleetSuite({
  schema: 'limits', privateRedis: true, dir: 'tollgate-limits-fleet-', store: true,
  // Counts here are exact only while every limits call gets its answer: on a loaded CI machine a
  // Redis reply can take longer than the default 500 ms, and a request then fails open.
  yaml: ({ redis }) => ({ log: { level: 'warn', flush_interval_ms: 50 }, metrics: { port: 0 }, redis: { url: redis, timeout_ms: 5000 } }),
});

const CHAT = 'POST /openai/v1/chat/completions';
const simCalls = (): number => suite.sim.calls()[CHAT] ?? 0;
const keyWith = keyMaker(suite, 'fleet-lim');
const settled = (keyId: string, orgId: string, requests: number) => logSettled(suite.db.url, keyId, orgId, requests);

describe('limits over three instances sharing PostgreSQL and Redis', () => {
  it('rpm=30: of 90 requests round-robin over three instances exactly 30 are served; the 429s carry the headers and cost nothing', async () => {
    const { key, keyId, orgId } = await keyWith({ rpm: 30 });
    const before = simCalls();
    const replies = await roundRobin(suite.fleet.urls(), 90, 9, (url, i) => chat(url, key, `rpm ${i}`));
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
    const [refusedCost] = await pgQuery<{ n: string; cost: string }>(suite.db.url,
      "SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS cost FROM request_logs WHERE api_key_id = $1 AND error_code = 'rate_limit_exceeded'", [keyId]);
    expect(refusedCost).toEqual({ n: '60', cost: '0' });
    expect(5_000_000 - balance).toBe(logged);
  }, 120_000);

  it('a $0.01 budget under 200 concurrent requests over three instances never spends more than $0.01', async () => {
    const { key, keyId, orgId } = await keyWith({ budget: { micros: 10_000, period: 'month' } });
    // Each request may cost up to ~300 µUSD (500 output tokens of gpt-4o-mini) and does: about 30 fit in the budget.
    const replies = await roundRobin(suite.fleet.urls(), 200, 200, (url, i) => chat(url, key, `budget ${i} [[sim:tokens=500]]`, 500));
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
    expect((await chat(suite.fleet.urls()[0]!, budgetKey.key, 'before')).status).toBe(200);

    // A bounded load on the rate-limited key, with Redis killed once a third of it is done.
    let done = 0;
    const load = roundRobin(suite.fleet.urls(), 60, 3, async (url, i) => {
      const r = await chat(url, rpmKey.key, `mid-run ${i}`);
      done++;
      return r;
    });
    for (let i = 0; i < 400 && done < 20; i++) await new Promise((r) => setTimeout(r, 25));
    await suite.redis.kill();
    const during = await load;
    expect(during.map((r) => r.status)).toEqual(new Array(60).fill(200));

    for (const url of suite.fleet.urls()) {
      const open = await chat(url, rpmKey.key, 'fail open');
      expect(open.status).toBe(200);
      expect(open.headers.get('x-ratelimit-limit-requests')).toBe('10000');
      expect(open.headers.get('x-ratelimit-remaining-requests')).toBeNull(); // the count is unknown while Redis is away
      const closed = await chat(url, budgetKey.key, 'fail closed');
      expect(closed.status).toBe(503);
      expect(closed.body.error?.code).toBe('limits_unavailable');
      expect(closed.headers.get('retry-after')).toBe('1');
    }
    const metrics = await Promise.all(suite.fleet.instances.map(async (s) => {
      const url = /Prometheus metrics on (\S+)/.exec(s.stdout())?.[1];
      expect(url).toBeDefined();
      return (await fetch(url!)).text();
    }));
    for (const text of metrics) {
      expect(Number(/^tollgate_limits_degraded_total\{kind="rpm"\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
      expect(Number(/^tollgate_limits_degraded_total\{kind="budget"\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
    }
    expect(suite.fleet.instances.some((s) => s.stdout().includes('limits store (Redis) unavailable'))).toBe(true);

    await suite.redis.start();
    let unavailable = suite.fleet.urls().length;
    for (const url of suite.fleet.urls()) {
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
    const [row] = await pgQuery<{ n: string; cost: string }>(suite.db.url,
      "SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS cost FROM request_logs WHERE api_key_id = $1 AND error_code = 'limits_unavailable'", [budgetKey.keyId]);
    expect(row).toEqual({ n: String(unavailable), cost: '0' });
  }, 120_000);
});
