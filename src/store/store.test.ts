import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { openStore } from './index.js';
import { DuplicateError, type LogRow, type Store } from './types.js';

import { drivers, type DriverEnv } from './drivers.testkit.js';

describe.each(drivers)('$name store', ({ setup }) => {
  const T0 = 1_700_000_000_000;
  const clock = { ms: T0 };
  const now = (): number => clock.ms;
  let env: DriverEnv | undefined;
  let store: Store;
  /** A second instance on the same database, as a second gateway process would open it. */
  let other: Store;

  beforeAll(async () => {
    env = setup();
    store = openStore(env.url('main'), now);
    other = openStore(env.url('main'), now);
    await store.ping();
    await other.ping();
  });

  afterAll(async () => {
    await store?.close();
    await other?.close();
    await env?.teardown();
  });

  const newOrg = (credits: number) => store.createOrg(`org ${newId('t')}`, credits, 'standard');

  it('creates, finds and refuses a duplicate org name', async () => {
    const before = await store.countOrgs();
    const org = await store.createOrg('Acme "Music" Ltd', 5_000_000, 'none');
    expect(org).toMatchObject({ name: 'Acme "Music" Ltd', balanceMicros: 5_000_000, retention: 'none', createdAt: T0 });
    expect(org.id).toMatch(/^org_/);
    expect(await store.getOrg(org.id)).toEqual(org);
    expect(await other.findOrgByName('Acme "Music" Ltd')).toEqual(org);
    expect(await store.findOrgByName('acme "music" ltd')).toBeUndefined();
    expect(await store.getOrg('org_missing')).toBeUndefined();
    expect(await store.countOrgs()).toBe(before + 1);
    await expect(other.createOrg('Acme "Music" Ltd', 0, 'standard')).rejects.toBeInstanceOf(DuplicateError);
    expect(await store.countOrgs()).toBe(before + 1);
    await store.setRetention(org.id, 'standard');
    expect((await store.getOrg(org.id))?.retention).toBe('standard');
  });

  it('adds and removes credits, never below zero, and credits are not charges', async () => {
    const org = await newOrg(1_000);
    expect(await store.addCredits(org.id, 2_500, 'top-up')).toBe(3_500);
    expect(await other.addCredits(org.id, -3_000, 'refund')).toBe(500);
    await expect(store.addCredits(org.id, -501, 'too much')).rejects.toBeInstanceOf(RangeError);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(500);
    expect(await store.addCredits(org.id, -500, 'all of it')).toBe(0);
    expect(await store.sumCharges(org.id)).toBe(0);
  });

  it('creates, finds and revokes API keys', async () => {
    const org = await newOrg(0);
    const prefix = `tg_${newId('k').slice(2, 10)}`;
    const project = await store.tenancy.findProject(org.id, 'default');
    const key = await store.tenancy.createKey({
      orgId: org.id, projectId: project!.id, prefix, hash: 'a'.repeat(64), name: '', expiresAt: null, allowedModels: null, createdBy: null,
    });
    expect(key).toMatchObject({ orgId: org.id, projectId: project!.id, prefix, hash: 'a'.repeat(64), createdAt: T0, revokedAt: null });
    expect(await other.findApiKey(prefix)).toEqual(key);
    expect(await store.findApiKey('tg_nothere')).toBeUndefined();
    clock.ms = T0 + 5_000;
    try {
      expect(await store.revokeApiKey(prefix)).toBe(true);
      expect(await other.revokeApiKey(prefix)).toBe(false);
    } finally {
      clock.ms = T0;
    }
    expect(await store.findApiKey(prefix)).toEqual({ ...key, revokedAt: T0 + 5_000 });
    expect(await store.revokeApiKey('tg_nothere')).toBe(false);
  });

  it('reserves exactly up to the balance and no further', async () => {
    const org = await newOrg(1_000);
    expect(await store.reserve(org.id, newId('req'), 1_001)).toBe(false);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(1_000);
    expect(await store.reserve(org.id, newId('req'), 1_000)).toBe(true);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(0);
    expect(await store.reserve(org.id, newId('req'), 1)).toBe(false);
    expect(await store.reserve('org_missing', newId('req'), 0)).toBe(false);
  });

  it('settles min(cost, reserved), returns the rest, and settles only once', async () => {
    const org = await newOrg(1_000);
    const [a, b, c] = [newId('req'), newId('req'), newId('req')];
    expect(await store.reserve(org.id, a, 600)).toBe(true);
    expect(await other.settle(a, 250)).toBe(250);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(750);
    expect(await store.settle(a, 250)).toBe(0);
    expect(await other.settle(a, 999)).toBe(0);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(750);

    expect(await store.reserve(org.id, b, 300)).toBe(true);
    expect(await store.settle(b, 500)).toBe(300);
    expect(await store.reserve(org.id, c, 400)).toBe(true);
    expect(await store.settle(c, -5)).toBe(0);
    expect(await store.settle(newId('req'), 100)).toBe(0);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(450);
    expect(await store.sumCharges(org.id)).toBe(550);
  });

  it('refuses a second reservation under the same request id without losing the debit', async () => {
    const org = await newOrg(1_000);
    const id = newId('req');
    expect(await store.reserve(org.id, id, 100)).toBe(true);
    await expect(other.reserve(org.id, id, 200)).rejects.toThrow();
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(900);
    expect(await store.settle(id, 100)).toBe(100);
  });

  it('releases stale reservations to their balances, and only those', async () => {
    const a = await newOrg(1_000);
    const b = await newOrg(1_000);
    const fresh = newId('req');
    clock.ms = 1_000; // before every other test's reservations, so the count below is exact
    try {
      expect(await store.reserve(a.id, newId('req'), 300)).toBe(true);
      expect(await store.reserve(a.id, newId('req'), 200)).toBe(true);
      expect(await other.reserve(b.id, newId('req'), 700)).toBe(true);
      clock.ms = 3_000;
      expect(await store.reserve(a.id, fresh, 100)).toBe(true);
      expect(await store.releaseStaleReservations(2_000)).toBe(3);
      expect(await other.releaseStaleReservations(2_000)).toBe(0);
    } finally {
      clock.ms = T0;
    }
    expect((await store.getOrg(a.id))?.balanceMicros).toBe(900);
    expect((await store.getOrg(b.id))?.balanceMicros).toBe(1_000);
    expect(await store.settle(fresh, 40)).toBe(40);
    expect((await store.getOrg(a.id))?.balanceMicros).toBe(960);
    expect(await store.sumCharges(a.id)).toBe(40);
    expect(await store.sumCharges(b.id)).toBe(0);
  });

  it('grants exactly the reservations the balance covers under 50 concurrent requests on two instances', async () => {
    const org = await newOrg(10_000);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? store : other).reserve(org.id, newId('req'), 300)));
    expect(results.filter(Boolean)).toHaveLength(33);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(100);
  });

  it('never overdraws and conserves money when reservations and settlements interleave', async () => {
    const initial = 20_000;
    const org = await newOrg(initial);
    const requests = Array.from({ length: 50 }, (_, i) => ({ id: newId('req'), amount: 400 + ((i * 137) % 900), cost: (i * 211) % 1_400 }));
    const reserved = await Promise.all(requests.map((r, i) => (i % 2 ? store : other).reserve(org.id, r.id, r.amount)));
    const afterReserve = (await store.getOrg(org.id))?.balanceMicros ?? -1;
    const granted = requests.filter((_, i) => reserved[i]);
    expect(granted.length).toBeGreaterThan(0);
    expect(granted.length).toBeLessThan(requests.length);
    expect(afterReserve).toBeGreaterThanOrEqual(0);
    expect(initial - afterReserve).toBe(granted.reduce((s, r) => s + r.amount, 0));
    // The balance only fell while reserving, so every refusal must have asked for more than the final balance.
    for (const [i, r] of requests.entries()) if (!reserved[i]) expect(r.amount).toBeGreaterThan(afterReserve);

    const charged = await Promise.all(granted.map((r, i) => (i % 2 ? other : store).settle(r.id, r.cost)));
    expect(charged).toEqual(granted.map((r) => Math.min(r.cost, r.amount)));
    const total = charged.reduce((s, c) => s + c, 0);
    const balance = (await store.getOrg(org.id))?.balanceMicros ?? -1;
    expect(balance).toBeGreaterThanOrEqual(0);
    expect(balance + total).toBe(initial);
    expect(await store.sumCharges(org.id)).toBe(total);
  });

  const logRow = (over: Partial<LogRow> = {}): LogRow => ({
    requestId: newId('req'), orgId: null, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'gpt-4o-mini', usedModel: 'gpt-4o-mini',
    usedProvider: 'openai', status: 200, errorCode: null, costMicros: 0, costEstimated: false, byok: false, durationMs: 12,
    ttfbMs: null, prompt: null, attempts: [], createdAt: T0, extra: null, promptTokens: null, completionTokens: null, deployment: null, ...over,
  });

  it('writes and reads request logs by request id and by log id', async () => {
    const org = await newOrg(0);
    const full = logRow({
      orgId: org.id, apiKeyId: 'key_abc', modality: 'music', deployment: 'primary', status: 502, errorCode: 'upstream_error', costMicros: 1_234,
      costEstimated: true, durationMs: 1_500, ttfbMs: 40, prompt: 'a "quoted" \\ prompt — with ünïcode 🎵\nand lines',
      attempts: [
        { provider: 'suno', model: 'v4', status: 503, error: 'overloaded', durationMs: 700 },
        { provider: 'udio', model: 'v1', status: null, error: null, durationMs: 800 },
      ],
      extra: { tracks: [{ id: 'trk_1', seconds: 12.5 }], instrumental: true, nested: { empty: null, list: [] } },
    });
    const bare = logRow();
    await store.insertLogs([full, bare]);
    expect(await other.getLog(full.requestId)).toEqual(full);
    expect(await store.getLog(`log_${full.requestId.slice(4)}`)).toEqual(full);
    expect(await store.getLog(bare.requestId)).toEqual(bare);
    expect(await store.getLog('req_missing')).toBeUndefined();
    await store.insertLogs([]);
  });

  it('replaces a log row written again under the same request id, even within one batch', async () => {
    const first = logRow({ status: 200, costMicros: 5 });
    await store.insertLogs([first]);
    const second = { ...first, status: 499, costMicros: 7, extra: { aborted: true } };
    await other.insertLogs([second]);
    expect(await store.getLog(first.requestId)).toEqual(second);
    const third = { ...first, status: 201 };
    await store.insertLogs([{ ...first, status: 500 }, third]);
    expect(await store.getLog(first.requestId)).toEqual(third);
  });

  it('stores durations as whole milliseconds and survives NUL characters from clients', async () => {
    const row = logRow({
      durationMs: 12.4, ttfbMs: 3.6, requestedModel: 'bad\u0000model', prompt: 'before\u0000after',
      attempts: [{ provider: 'p', model: 'm', status: null, error: 'nul\u0000inside', durationMs: 1 }],
      extra: { text: 'json\u0000nul' },
    });
    await store.insertLogs([row]);
    const got = await store.getLog(row.requestId);
    expect(got).toMatchObject({ durationMs: 12, ttfbMs: 4, attempts: row.attempts, extra: row.extra });
    // PostgreSQL text cannot hold NUL: the row must still be written, with the rest of the text intact.
    expect(got?.prompt).toMatch(/^before.after$/u);
    expect(got?.requestedModel).toMatch(/^bad.model$/u);
    expect(await store.getLog('req_\u0000')).toBeUndefined();
    expect(await store.findOrgByName('no\u0000such org')).toBeUndefined();
  });

  it('keeps ledger charges equal to the debited costs in the request log', async () => {
    const org = await newOrg(1_000_000);
    const bystander = await newOrg(1_000_000);
    const rows: LogRow[] = [];
    for (const [amount, cost] of [[5_000, 1_234], [5_000, 9_999], [100, 0], [2_000, 2_000]] as const) {
      const requestId = newId('req');
      expect(await store.reserve(org.id, requestId, amount)).toBe(true);
      rows.push(logRow({ requestId, orgId: org.id, costMicros: await store.settle(requestId, cost) }));
    }
    rows.push(logRow({ orgId: org.id, costMicros: 777, byok: true }));
    rows.push(logRow({ orgId: org.id, status: 402, errorCode: 'insufficient_credits' }));
    const id = newId('req');
    expect(await store.reserve(bystander.id, id, 50)).toBe(true);
    rows.push(logRow({ requestId: id, orgId: bystander.id, costMicros: await store.settle(id, 50) }));
    await store.insertLogs(rows);

    expect(await store.sumCharges(org.id)).toBe(8_234);
    expect(await other.sumLoggedCosts(org.id)).toBe(8_234);
    expect(await store.sumCharges(bystander.id)).toBe(50);
    expect(await store.sumLoggedCosts(bystander.id)).toBe(50);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(1_000_000 - 8_234);
  });

  it('lets several instances start together on an empty database', async () => {
    const url = env!.url('fresh');
    const stores = Array.from({ length: 4 }, () => openStore(url, now));
    try {
      await Promise.all(stores.map((s, i) => s.createOrg(`starter ${i}`, 10, 'standard')));
      expect(await stores[0]!.countOrgs()).toBe(4);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

describe('openStore', () => {
  it('refuses unknown database urls and bad schema names without leaking credentials', async () => {
    expect(() => openStore('mysql://root:secret@db/x')).toThrow(/not supported/);
    expect(() => openStore('mysql://root:secret@db/x')).not.toThrow(/secret/);
    expect(() => openStore('postgres://u@h/db?schema=Bad-Name')).toThrow(RangeError);
    const store = openStore('postgresql://u@h/db?schema=ok_name');
    expect(store.kind).toBe('postgres');
    await store.close();
  });
});
