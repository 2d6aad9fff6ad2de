import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import { webhookUrlProblem } from '../src/lib/ssrf.js';
import { useGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';
import { addUser, code, rows, signIn, type Obj } from './management-helpers.js';
import { Receiver, signatureValid, until } from './webhook-receiver.js';

/*
 * Alerts as signed webhooks through the outbox (docs/management.md "Webhooks", docs/limits.md
 * "Alerts"), one gateway on SQLite; test/webhooks-fleet.test.ts runs three on PostgreSQL + Redis.
 */
const t = useGateway({ yaml: { webhooks: { allow_private_urls: true, retry_initial_ms: 300 } } });
let rx: Receiver;
beforeAll(async () => {
  rx = await Receiver.start(2);
});
afterAll(async () => rx?.close());

/** A request whose cost is mostly its 1000 output tokens, so its cost bound is close to its cost. */
const chat = (key: string, n: number) => postJson(`${t.url}/v1/chat/completions`, {
  model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${n} [[sim:tokens=1000]]` }], max_tokens: 1000,
}, key);

describe('budget alerts as signed webhooks', () => {
  it('each threshold (50, 80, 100 %) arrives once, signed; a receiver failing twice gets each once after retries; the secret is shown once', async () => {
    const { org } = await t.org('alerts', '10');
    await addUser(t, 'owner@alerts.test', { org: 'alerts', role: 'owner' });
    const api = await signIn(t.url, 'owner@alerts.test');
    const made = await api.post(`/api/v1/orgs/${org.id}/webhooks`, { url: `${rx.url}/hook` });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const secret = made.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const flaky = await api.post(`/api/v1/orgs/${org.id}/webhooks`, { url: `${rx.url}/flaky`, events: ['budget.threshold'] });
    expect(flaky.status).toBe(201);
    // Shown once: no list or read returns it again.
    const listed = await api.get(`/api/v1/orgs/${org.id}/webhooks`);
    expect(rows(listed).map((w) => w.url)).toEqual([`${rx.url}/hook`, `${rx.url}/flaky`]);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect(rows(listed).every((w) => !('secret' in w))).toBe(true);

    // What one request costs, then a budget of ten of them.
    const probe = await chat((await createKey(t.gateway.store, 'alerts')).key, 0);
    const cost = (await logRow(t, probe.headers.get('x-request-id')!)).costMicros;
    expect(cost).toBeGreaterThan(0);
    const { key } = await createKey(t.gateway.store, 'alerts', { limits: { budget: { micros: cost * 10, period: 'day' } } });
    t.gateway.startTasks();
    const statuses = [];
    for (let i = 1; i <= 12; i++) statuses.push((await chat(key, i)).status);
    // Admission keeps the spend within the budget: the last requests whose bound no longer fits are refused.
    expect(statuses.slice(0, 9)).toEqual(Array(9).fill(200));
    expect(statuses.at(-1)).toBe(429);

    const budgetEvents = (path: string) => rx.delivered(path).filter((e) => e.type === 'budget.threshold');
    const arrived = await until(() => budgetEvents("/hook").length >= 3 && budgetEvents("/flaky").length >= 3);
    expect(arrived, JSON.stringify({ statuses, got: rx.got.map((g) => [g.path, g.status, g.body]) })).toBe(true);
    await new Promise((r) => setTimeout(r, 2500)); // more retries and task runs: nothing more may arrive
    for (const path of ['/hook', '/flaky']) {
      const events = budgetEvents(path);
      expect(events.map((e) => e.threshold)).toEqual([50, 80, 100]);
      expect(new Set(events.map((e) => e.id)).size).toBe(3);
      expect(events[0]).toMatchObject({ type: 'budget.threshold', org: 'alerts', project: 'default', scope: 'key', budget: (cost * 10) / 1e6, period: { kind: 'day' } });
      expect(events[0]!.key).toMatch(/^tg_/);
      expect(typeof events[0]!.time).toBe('string');
    }
    // 50 and 80: the spend reached them; 100: what is left no longer covers a request like the last.
    for (const e of budgetEvents('/hook').slice(0, 2)) expect(Number(e.spent)).toBeGreaterThanOrEqual((Number(e.threshold) / 100) * Number(e.budget) - 1e-9);
    expect(Number(budgetEvents('/hook')[2]!.spent)).toBeLessThanOrEqual(Number(budgetEvents('/hook')[2]!.budget));
    // Every POST to /hook is signed with its secret; /flaky's with its own (not /hook's).
    const hookPosts = rx.got.filter((g) => g.path === '/hook');
    expect(hookPosts.length).toBe(3);
    for (const g of hookPosts) expect(signatureValid(secret, g)).toBe(true);
    const flakyPosts = rx.got.filter((g) => g.path === '/flaky');
    expect(flakyPosts.map((g) => g.status)).toEqual(expect.arrayContaining([500, 500, 200]));
    expect(flakyPosts.filter((g) => g.status === 200).length).toBe(3);
    expect(flakyPosts.length).toBe(9); // per event: two 500s, then the 200, then never again
    for (const g of flakyPosts) expect(signatureValid(flaky.body.secret as string, g)).toBe(true);
    for (const g of flakyPosts) expect(signatureValid(secret, g)).toBe(false);

    const history = await api.get(`/api/v1/orgs/${org.id}/webhooks/${flaky.body.id as string}/deliveries`);
    expect(history.status).toBe(200);
    expect(rows(history).map((d) => [d.status, d.attempts, d.last_status])).toEqual([['delivered', 3, 200], ['delivered', 3, 200], ['delivered', 3, 200]]);
    await expectLedgerMatchesLog(t, org.id);
  });

  it('send test event: queued, delivered signed, in the history; Slack-compatible body on request; delete', async () => {
    const { org } = await t.org('alerts-test', '1');
    await addUser(t, 'owner@alerts-test.test', { org: 'alerts-test', role: 'owner' });
    const api = await signIn(t.url, 'owner@alerts-test.test');
    const made = await api.post(`/api/v1/orgs/${org.id}/webhooks`, { url: `${rx.url}/slack`, slack: true });
    expect(made.status).toBe(201);
    const sent = await api.post(`/api/v1/orgs/${org.id}/webhooks/${made.body.id as string}/test`);
    expect(sent.status).toBe(202);
    t.gateway.startTasks();
    expect(await until(() => rx.delivered('/slack').length === 1)).toBe(true);
    const g = rx.got.find((x) => x.path === '/slack')!;
    expect(JSON.parse(g.body)).toEqual({ text: 'Tollgate test event for org alerts-test' });
    expect(signatureValid(made.body.secret as string, g)).toBe(true);
    expect(g.headers['x-tollgate-event-id']).toBe(sent.body.event_id);
    const history = rows(await api.get(`/api/v1/orgs/${org.id}/webhooks/${made.body.id as string}/deliveries`));
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ event_id: sent.body.event_id, type: 'test', status: 'delivered', attempts: 1 });
    expect((history[0]!.payload as Obj).type).toBe('test');
    expect((await api.delete(`/api/v1/orgs/${org.id}/webhooks/${made.body.id as string}`)).status).toBe(200);
    expect(code(await api.get(`/api/v1/orgs/${org.id}/webhooks/${made.body.id as string}/deliveries`))).toBe('not_found');
  });
});

describe('the balance alert', () => {
  it('fires balance.below once when traffic takes the balance below the amount; again only after a top-up took it back above', async () => {
    const { org, key } = await t.org('low-balance', '0.01');
    await addUser(t, 'owner@low-balance.test', { org: 'low-balance', role: 'owner' });
    await addUser(t, 'admin@low-balance.test', { org: 'low-balance', role: 'admin' });
    const api = await signIn(t.url, 'owner@low-balance.test');
    const made = await api.post(`/api/v1/orgs/${org.id}/webhooks`, { url: `${rx.url}/balance`, events: ['balance.below'] });
    expect(made.status).toBe(201);
    // An owner sets it; an admin may read it, not change it.
    const admin = await signIn(t.url, 'admin@low-balance.test');
    expect((await admin.put(`/api/v1/orgs/${org.id}/balance-alert`, { below_usd: '1' })).status).toBe(403);
    expect((await admin.get(`/api/v1/orgs/${org.id}/balance-alert`)).body).toEqual({ below_usd: null, period_start: null, fired: false });
    expect(code(await api.put(`/api/v1/orgs/${org.id}/balance-alert`, { below_usd: 0 }))).toBe('invalid_request');
    const set = await api.put(`/api/v1/orgs/${org.id}/balance-alert`, { below_usd: '0.008' });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ below_usd: 0.008, fired: false });
    t.gateway.startTasks();

    const events = () => rx.delivered('/balance');
    const balance = async () => t.balance(org.id);
    // Requests of about $0.0006 each until the balance is below $0.008 (bounded), then a few more.
    let n = 0;
    for (; n < 40 && (await balance()) >= 8000; n++) {
      expect((await chat(key, n)).status).toBe(200);
      await t.gateway.log.flush();
    }
    expect(await balance()).toBeLessThan(8000);
    for (let i = 0; i < 3; i++) expect((await chat(key, 100 + i)).status).toBe(200);
    expect(await until(() => events().length >= 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 2500)); // more checks, more traffic seen: nothing more may arrive
    expect(events()).toHaveLength(1);
    expect(events()[0]).toMatchObject({ type: 'balance.below', org: 'low-balance', threshold: 0.008 });
    expect(Number(events()[0]!.balance)).toBeLessThan(0.008);
    expect(signatureValid(made.body.secret as string, rx.got.find((g) => g.path === '/balance')!)).toBe(true);
    expect((await api.get(`/api/v1/orgs/${org.id}/balance-alert`)).body).toMatchObject({ below_usd: 0.008, fired: true });

    // A top-up above the amount starts a new period; the next fall below fires once more.
    await t.gateway.store.addCredits(org.id, 10_000, 'top-up');
    expect(await until(async () => (await api.get(`/api/v1/orgs/${org.id}/balance-alert`)).body.fired === false)).toBe(true);
    for (let i = 0; i < 40 && (await balance()) >= 8000; i++) {
      expect((await chat(key, 200 + i)).status).toBe(200);
      await t.gateway.log.flush();
    }
    expect(await until(() => events().length >= 2)).toBe(true);
    await new Promise((r) => setTimeout(r, 2000));
    expect(events()).toHaveLength(2);
    expect(events()[1]!.id).not.toBe(events()[0]!.id);
    await expectLedgerMatchesLog(t, org.id);
  });
});

describe('SSRF: webhook URLs to private addresses', () => {
  it('refuses loopback, private, link-local and names resolving to them unless allowed; accepts a public address', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://[::1]/x', 'http://169.254.169.254/latest', 'http://10.1.2.3/', 'http://192.168.0.1/',
      'http://[::ffff:127.0.0.1]/', 'http://[fe80::1]/', 'http://0.0.0.0/']) {
      expect(await webhookUrlProblem(url, false), url).toMatch(/private, loopback or link-local/);
      expect(await webhookUrlProblem(url, true), url).toBeUndefined();
    }
    // Not just the literal: a name is resolved, and one address inside is enough to refuse.
    const resolver = (async () => [{ address: '93.184.216.34', family: 4 }, { address: '127.0.0.1', family: 4 }]) as unknown as Parameters<typeof webhookUrlProblem>[2];
    expect(await webhookUrlProblem('https://hooks.example.com/x', false, resolver)).toMatch(/127\.0\.0\.1/);
    expect(await webhookUrlProblem('https://93.184.216.34/x', false)).toBeUndefined();
    expect(await webhookUrlProblem('ftp://93.184.216.34/x', false)).toMatch(/http or https/);
  });

  describe('a gateway without webhooks.allow_private_urls', () => {
    const strict = useGateway();
    it('answers 400 to a loopback URL and stores nothing', async () => {
      const { org } = await strict.org('strict', '1');
      await addUser(strict, 'owner@strict.test', { org: 'strict', role: 'owner' });
      const api = await signIn(strict.url, 'owner@strict.test');
      const r = await api.post(`/api/v1/orgs/${org.id}/webhooks`, { url: `${rx.url}/hook` });
      expect(r.status).toBe(400);
      expect(code(r)).toBe('invalid_request');
      expect(JSON.stringify(r.body)).toMatch(/allow_private_urls/);
      expect(rows(await api.get(`/api/v1/orgs/${org.id}/webhooks`))).toEqual([]);
    });
  });
});

describe('webhooks.budget_thresholds', () => {
  const g = useGateway({ yaml: { webhooks: { allow_private_urls: true, retry_initial_ms: 300, budget_thresholds: [60, 30] } } });
  let r2: Receiver;
  beforeAll(async () => {
    r2 = await Receiver.start(0);
  });
  afterAll(async () => r2?.close());

  it('fires at the configured percentages, each once, and at no other', async () => {
    const { org } = await g.org('custom', '10');
    await g.gateway.store.webhooks.create(org.id, { url: `${r2.url}/hook`, events: ['budget.threshold'], slack: false, secret: 'whsec_custom' }, null);
    const ask = (key: string, n: number) => postJson(`${g.url}/v1/chat/completions`, {
      model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${n} [[sim:tokens=1000]]` }], max_tokens: 1000,
    }, key);
    const probe = await ask((await createKey(g.gateway.store, 'custom')).key, 0);
    const cost = (await logRow(g, probe.headers.get('x-request-id')!)).costMicros;
    const { key } = await createKey(g.gateway.store, 'custom', { limits: { budget: { micros: cost * 10, period: 'day' } } });
    g.gateway.startTasks();
    for (let i = 1; i <= 12; i++) await ask(key, i);
    expect(await until(() => r2.delivered('/hook').length >= 2)).toBe(true);
    await new Promise((r) => setTimeout(r, 1500)); // more task runs: nothing more may arrive
    expect(r2.delivered('/hook').map((e) => e.threshold)).toEqual([30, 60]);
    await expectLedgerMatchesLog(g, org.id);
  });
});
