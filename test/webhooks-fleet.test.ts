import { afterAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, createUser } from '../src/tenancy/admin.js';
import { freePort, pgQuery, roundRobin } from './fleet.js';
import { fleetSuite } from './fleet-suite.js';
import { expectLedgersExactAt } from './harness.js';
import { PASSWORD, signIn } from './management-helpers.js';
import { Receiver, signatureValid, until } from './webhook-receiver.js';

/*
 * Alerts over three gateway processes on one PostgreSQL schema and a private Redis (issue 32,
 * docs/management.md "Webhooks"): each budget threshold crossed by traffic spread over the
 * three instances fires one event, delivered once and signed; an event whose receiver is away
 * survives a SIGKILL and a full stop of the fleet in the outbox and is delivered once when a
 * gateway runs again and the receiver comes up. The org's balance alert fires once as well. Loopback only; every wait is bounded.
 */
const suite = fleetSuite({
  schema: 'webhooks', privateRedis: true, dir: 'tollgate-webhooks-fleet-', store: true,
  yaml: ({ db, redis }) => ({
    log: { level: 'warn', flush_interval_ms: 50 }, redis: { url: redis, timeout_ms: 5000 },
    database: { url: db, instance_timeout_ms: 1000 },
    webhooks: { allow_private_urls: true, retry_initial_ms: 200 },
  }),
});
let rx: Receiver | undefined;
afterAll(async () => rx?.close());

/** A request whose cost is mostly its 1000 output tokens, so its cost bound is close to its cost. */
async function chat(url: string, key: string, n: number): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', signal: AbortSignal.timeout(20_000),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${n} [[sim:tokens=1000]]` }], max_tokens: 1000 }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** An org with an owner signed in on instance 0, and a key whose daily budget is ten requests like `chat`'s. */
async function orgWithBudgetKey(name: string): Promise<{ orgId: string; key: string; api: Awaited<ReturnType<typeof signIn>> }> {
  const org = await createOrg(suite.store, name, '5', 'standard');
  await createUser(suite.store, { email: `owner@${name}.test`, password: PASSWORD, org: name, role: 'owner' });
  const probe = await createKey(suite.store, name);
  expect(await chat(suite.fleet.urls()[0]!, probe.key, 0)).toBe(200);
  let cost = 0;
  for (let i = 0; i < 100 && cost === 0; i++) {
    const [row] = await pgQuery<{ cost: string }>(suite.db.url, 'SELECT cost_micros AS cost FROM request_logs WHERE api_key_id = $1', [probe.record.id]);
    cost = Number(row?.cost ?? 0);
    if (cost === 0) await new Promise((r) => setTimeout(r, 50));
  }
  expect(cost).toBeGreaterThan(0);
  const { key } = await createKey(suite.store, name, { limits: { budget: { micros: cost * 10, period: 'day' } } });
  return { orgId: org.id, key, api: await signIn(suite.fleet.urls()[0]!, `owner@${name}.test`) };
}

const deliveries = (orgId: string) => pgQuery<{ event_id: string; status: string; attempts: number; last_error: string | null }>(suite.db.url,
  'SELECT event_id, status, attempts, last_error FROM webhook_deliveries WHERE org_id = $1 ORDER BY created_at', [orgId]);

describe('budget alerts over three instances on PostgreSQL + Redis', () => {
  it('traffic round-robin over the three crosses 50, 80 and 100 %: each threshold arrives once, signed', async () => {
    rx = await Receiver.start(0);
    const { orgId, key, api } = await orgWithBudgetKey('fleet-alerts');
    const made = await api.post(`/api/v1/orgs/${orgId}/webhooks`, { url: `${rx.url}/hook`, events: ['budget.threshold'] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    // The org's $5 less about ten requests of $0.0006 ends below $4.997: balance.below fires once too.
    const low = await api.post(`/api/v1/orgs/${orgId}/webhooks`, { url: `${rx.url}/balance`, events: ['balance.below'] });
    expect(low.status).toBe(201);
    expect((await api.put(`/api/v1/orgs/${orgId}/balance-alert`, { below_usd: '4.997' })).status).toBe(200);

    const statuses = await roundRobin(suite.fleet.urls(), 12, 1, (url, i) => chat(url, key, i + 1));
    expect(statuses.slice(0, 9)).toEqual(Array(9).fill(200));
    expect(statuses.at(-1)).toBe(429);

    const events = () => rx!.delivered('/hook');
    expect(await until(() => events().length >= 3 && rx!.delivered('/balance').length >= 1, 30_000), JSON.stringify(rx.got.map((g) => [g.status, g.body]))).toBe(true);
    await new Promise((r) => setTimeout(r, 3000)); // every instance's delivery task runs again: nothing more may arrive
    expect(events().map((e) => e.threshold).sort()).toEqual([100, 50, 80]);
    expect(new Set(events().map((e) => e.id)).size).toBe(3);
    const hookPosts = rx.got.filter((g) => g.path === '/hook');
    expect(hookPosts).toHaveLength(3);
    for (const g of hookPosts) expect(signatureValid(made.body.secret as string, g)).toBe(true);
    const balancePosts = rx.got.filter((g) => g.path === '/balance');
    expect(balancePosts).toHaveLength(1);
    expect(signatureValid(low.body.secret as string, balancePosts[0]!)).toBe(true);
    expect(JSON.parse(balancePosts[0]!.body)).toMatchObject({ type: 'balance.below', org: 'fleet-alerts', threshold: 4.997 });
    const rows = await deliveries(orgId);
    expect(rows.map((r) => [r.status, Number(r.attempts)])).toEqual(Array(4).fill(['delivered', 1]));
    const [crossings] = await pgQuery<{ n: string }>(suite.db.url, 'SELECT COUNT(*) AS n FROM alert_events WHERE org_id = $1', [orgId]);
    expect(crossings!.n).toBe('4');
  }, 120_000);

  it('the receiver refuses when the crossing happens, one instance is SIGKILLed, the rest stopped, one restarted, the receiver comes up: delivered once', async () => {
    const { orgId, key, api } = await orgWithBudgetKey('fleet-alerts-crash');
    const port = await freePort(); // nobody listens there yet: connections are refused
    const made = await api.post(`/api/v1/orgs/${orgId}/webhooks`, { url: `http://127.0.0.1:${port}/late`, events: ['budget.threshold'] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);

    // 6 of the 10 requests the budget holds: 50 % crossed, not 80.
    const statuses = await roundRobin(suite.fleet.urls(), 6, 1, (url, i) => chat(url, key, i + 1));
    expect(statuses).toEqual(Array(6).fill(200));
    // The event is in the outbox and its delivery has failed at least once (refused). An attempt is
    // counted when it is claimed and its error written when it fails: wait for both.
    expect(await until(async () => (await deliveries(orgId)).some((d) => Number(d.attempts) >= 1 && d.last_error), 20_000)).toBe(true);
    const [pending] = await deliveries(orgId);
    expect(pending).toMatchObject({ status: 'pending' });
    expect(pending!.last_error).toBeTruthy();

    await suite.fleet.kill(0);
    await suite.fleet.stop();
    const back = await suite.fleet.restart(1);
    const late = await Receiver.start(0, port);
    try {
      const arrived = () => late.delivered('/late');
      expect(await until(() => arrived().length >= 1, 40_000), back.stdout()).toBe(true);
      await new Promise((r) => setTimeout(r, 3000)); // more runs of the delivery task: nothing more may arrive
      expect(late.got).toHaveLength(1);
      const [event] = arrived();
      expect(event).toMatchObject({ id: pending!.event_id, type: 'budget.threshold', org: 'fleet-alerts-crash', threshold: 50, scope: 'key' });
      expect(signatureValid(made.body.secret as string, late.got[0]!)).toBe(true);
      const rows = await deliveries(orgId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ event_id: pending!.event_id, status: 'delivered' });
      expect(Number(rows[0]!.attempts)).toBeGreaterThan(1);
      // The killed instance's balance slice is reclaimed by the running one's reaper: every org balances.
      await expectLedgersExactAt(suite.db.url);
    } finally {
      await late.close();
    }
  }, 180_000);
});
