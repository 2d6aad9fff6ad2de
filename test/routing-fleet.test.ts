import { describe, expect, it } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import { pgQuery, roundRobin } from './fleet.js';
import { chatReply, fleetSuite } from './fleet-suite.js';
import { expectLedgersExactAt, simulatorOverrides } from './harness.js';

/*
 * The cooldown shared by a fleet (issue 31): three gateway processes on one PostgreSQL and
 * one Redis, three OpenAI keys of which one starts answering 429 with Retry-After: 2 while
 * 500 requests go round-robin over the instances. No client sees an error; the limited key
 * gets no traffic on any instance for its Retry-After, then gets traffic again. The
 * ledger equals the logged costs once the fleet has stopped.
 */
const suite = fleetSuite({
  schema: 'routing', privateRedis: true, dir: 'tollgate-routing-fleet-', store: true,
  yaml: ({ sim, redis }) => {
    const providers = simulatorOverrides(sim);
    return {
      log: { level: 'warn', flush_interval_ms: 50 }, metrics: { port: 0 },
      redis: { url: redis, timeout_ms: 5000 },
      routing: { watch: false },
      providers: {
        ...providers,
        openai: {
          base_url: providers.openai!.base_url,
          keys: [{ name: 'east', api_key: 'f-east' }, { name: 'west', api_key: 'f-west' }, { name: 'north', api_key: 'f-north' }],
        },
      },
    };
  },
});
const chat = (url: string, key: string, content: string) => chatReply(url, key, content, 20, 30_000);

/** Each instance's Prometheus URL, from the line `gateway serve` prints. */
const metricsUrls = (): string[] => suite.fleet.instances.map((s) => /Prometheus metrics on (\S+)/.exec(s.stdout())?.[1] ?? '');

describe('a rate-limited key across three instances', () => {
  it('500 requests see no error; the key that answered 429 (Retry-After: 2) rests on every instance for 2 s, then serves again', async () => {
    const org = await createOrg(suite.store, 'routing-fleet', '20', 'standard');
    const { key } = await createKey(suite.store, org.name);
    const urls = suite.fleet.urls();
    // Each request takes ≥ 80 ms upstream: 350 of them 9 at a time outlast the 2 s window.
    const send = (tag: string) => (url: string, i: number) => chat(url, key, `${tag} ${i} [[sim:delay_ms=80]]`);
    const first = await roundRobin(urls, 150, 9, send('before'));
    const limitedAt = Date.now();
    suite.sim.rateLimitKey('f-west', 2);
    const westAt = () => suite.sim.keyHistory().filter((c) => c.key === 'f-west');
    // While the rest run: once the first 429 came back, every instance reports west as cooling.
    const seenCooling = (async (): Promise<string[]> => {
      for (let i = 0; i < 300 && !westAt().some((c) => c.limited); i++) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 300));
      return Promise.all(metricsUrls().map(async (u) => {
        const text = await (await fetch(u)).text();
        return /tollgate_deployment_state\{provider="openai",deployment="west"\} (\d)/.exec(text)?.[1] ?? 'absent';
      }));
    })();
    const rest = await roundRobin(urls, 350, 9, send('after'));
    const replies = [...first, ...rest];
    expect(replies.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body.error?.code}`)).toEqual([]);
    expect(await seenCooling).toEqual(['1', '1', '1']);

    const west = westAt().filter((c) => c.at >= limitedAt);
    const refused = west.filter((c) => c.limited);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    const t0 = refused[0]!.at;
    // Shared within a second: the only 429s are those already on their way when the first came back.
    expect(refused.every((c) => c.at <= t0 + 1000)).toBe(true);
    // Then no traffic at all to that key from any instance until its Retry-After has passed…
    expect(west.filter((c) => c.at > t0 + 1000 && c.at < t0 + 1900)).toEqual([]);
    // …and served again after it.
    expect(west.filter((c) => !c.limited && c.at >= limitedAt + 2000).length).toBeGreaterThanOrEqual(1);

    // Every reply is logged with the deployment that served it.
    const rows = await pgQuery<{ deployment: string | null; n: string }>(suite.db.url, `SELECT deployment, COUNT(*) AS n FROM request_logs WHERE org_id = $1 GROUP BY deployment`, [org.id]);
    for (let i = 0; i < 100 && rows.reduce((s, r) => s + Number(r.n), 0) < 500; i++) {
      await new Promise((r) => setTimeout(r, 50));
      rows.splice(0, rows.length, ...(await pgQuery<{ deployment: string | null; n: string }>(suite.db.url, `SELECT deployment, COUNT(*) AS n FROM request_logs WHERE org_id = $1 GROUP BY deployment`, [org.id])));
    }
    expect(rows.map((r) => r.deployment).sort()).toEqual(['east', 'north', 'west']);
    expect(rows.reduce((s, r) => s + Number(r.n), 0)).toBe(500);

    await suite.fleet.stop();
    await expectLedgersExactAt(suite.db.url);
  }, 180_000);
});
