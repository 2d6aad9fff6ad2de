import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { pgQuery, sharedPostgresSchema } from './drivers.testkit.js';
import { PostgresStore } from './postgres.js';
import type { LogRow } from './types.js';

/*
 * Balance slices (issue 14, finding 5): an instance takes a slice of a busy org's balance
 * into its own row and reserves against it in memory, so requests do not queue on the
 * org's balance row. Whatever happens to the slice (spent, given back when idle, returned
 * at shutdown, taken by the reaper while the instance was silent), the org's money is
 * exact: credited − balance − held = Σ charges = Σ logged costs.
 */

const db = sharedPostgresSchema('slices');
const { url } = db;

afterAll(() => db.drop());

const SLICE = 10_000;
const TIMEOUT = 60_000;

/** A gateway instance's store with balance slices of SLICE µUSD (no background ticks within a test: the window is a minute). */
async function instance(now: () => number = Date.now): Promise<PostgresStore> {
  const store = new PostgresStore(url, now, { ledger: { instanceTimeoutMs: TIMEOUT, reservationMaxAgeMs: 3_600_000, sliceMicros: SLICE } });
  await store.ledger!.heartbeat();
  return store;
}

const rowFor = (requestId: string, orgId: string, costMicros: number): LogRow => ({
  requestId, orgId, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'gpt-4o-mini',
  usedModel: 'gpt-4o-mini', usedProvider: 'openai', status: 200, errorCode: null, costMicros, costEstimated: false, byok: false,
  durationMs: 5, ttfbMs: null, prompt: null, attempts: [], createdAt: Date.now(), extra: null, promptTokens: 10, completionTokens: 2,
});

const ids = (n: number, tag: string): string[] => Array.from({ length: n }, (_, i) => `req_${tag}_${i}_${randomBytes(4).toString('hex')}`);

const slicesOf = async (orgId: string): Promise<Array<{ instance_id: string; amount: number }>> =>
  (await pgQuery<{ instance_id: string; amount: string }>(url, 'SELECT instance_id, amount_micros AS amount FROM balance_slices WHERE org_id = $1 ORDER BY instance_id', [orgId]))
    .map((r) => ({ instance_id: r.instance_id, amount: Number(r.amount) }));

const orgRow = async (orgId: string): Promise<number> =>
  Number((await pgQuery<{ b: string }>(url, 'SELECT balance_micros AS b FROM orgs WHERE id = $1', [orgId]))[0]?.b);

/** Reserves, settles at `cost` and writes the row of each request; returns what was charged. */
async function serve(store: PostgresStore, orgId: string, requests: string[], reserve: number, cost: number): Promise<number> {
  const granted = await Promise.all(requests.map((id) => store.reserve(orgId, id, reserve)));
  expect(granted.every(Boolean)).toBe(true);
  let charged = 0;
  for (const id of requests) charged += await store.settle(id, cost);
  await store.insertLogs(requests.map((id) => rowFor(id, orgId, cost)));
  return charged;
}

async function expectExact(store: PostgresStore, orgId: string): Promise<void> {
  const a = await store.audit(orgId);
  expect({ held: a.held, charged: a.charged, balanceChange: a.credited - a.balance }).toEqual({ held: 0, charged: a.logged, balanceChange: a.logged });
}

/**
 * Runs `body` on a new instance's store with a new org holding `balance` µUSD, then expects
 * the org's money exact; the instance is closed (its slices given back) whatever happens.
 */
async function withOrg(name: string, balance: number, body: (store: PostgresStore, orgId: string) => Promise<void>): Promise<void> {
  const store = await instance();
  try {
    const org = await store.createOrg(name, balance, 'standard');
    await body(store, org.id);
    await expectExact(store, org.id);
  } finally {
    await store.close();
  }
}

describe('PostgreSQL balance slices', () => {
  it('an admin credit change returns the balance as shown (slices counted); a debit the row cannot cover says what the slices hold', () => withOrg('slice-admin', 200_000, async (store, orgId) => {
    const charged = await serve(store, orgId, ids(10, 'admin'), 200, 150);
    expect(await orgRow(orgId)).toBe(200_000 - SLICE);
    expect(await store.addCredits(orgId, 5_000, 'top-up')).toBe(205_000 - charged);
    expect(await store.addCredits(orgId, 5_000, 'top-up')).toBe((await store.getOrg(orgId))?.balanceMicros);
    // The row holds 200,000 − SLICE; the slice holds the rest, out of the debit's reach.
    await expect(store.addCredits(orgId, -(await orgRow(orgId)) - 1, 'correction'))
      .rejects.toThrow(`; $${((SLICE - charged) / 1e6).toFixed(6)} of it is held by running gateway instances (balance slices)`);
    expect(await store.addCredits(orgId, -(await orgRow(orgId)), 'correction')).toBe(SLICE - charged);
  }));

  it('reserves a busy org\'s requests against one slice: the org row moves once, charges are written against the slice', async () => {
    await withOrg('slice-busy', 1_000_000, async (store, orgId) => {
      const charged = await serve(store, orgId, ids(40, 'busy'), 200, 150);
      expect(charged).toBe(40 * 150);
      // One top-up of SLICE for 40 reservations of 200 (8,000 reserved at most at once): the org's row moved once.
      expect(await orgRow(orgId)).toBe(1_000_000 - SLICE);
      expect(await slicesOf(orgId)).toEqual([{ instance_id: store.ledger!.instanceId, amount: SLICE - charged }]);
      expect(await store.sumCharges(orgId)).toBe(charged);
      // The balance an org's members see counts the slice (less nothing: no request in flight).
      expect((await store.getOrg(orgId))?.balanceMicros).toBe(1_000_000 - charged);
    });
    // Shutdown gives the slice back.
    expect(await pgQuery(url, 'SELECT 1 FROM balance_slices')).toEqual([]);
  });

  it('counts what is reserved from a slice as held while the request is in flight', () => withOrg('slice-inflight', 1_000_000, async (store, orgId) => {
    const [id] = ids(1, 'inflight');
    expect(await store.reserve(orgId, id!, 3000)).toBe(true);
    const during = await store.audit(orgId);
    expect({ held: during.held, balance: during.balance }).toEqual({ held: 3000, balance: 1_000_000 - 3000 });
    expect((await store.getOrg(orgId))?.balanceMicros).toBe(1_000_000 - 3000);
    expect(await store.settle(id!, 1000)).toBe(1000);
    expect((await store.audit(orgId)).held).toBe(1000); // charged, its row not written yet
    await store.insertLogs([rowFor(id!, orgId, 1000)]);
  }));

  it('gives an org with a low balance no slice: its last money is reserved on its row, exactly', () => withOrg('slice-low', 50_000, async (store, orgId) => {
    // 8 slices' worth must stay on the row after a top-up: the org's 50,000 is below that.
    const requests = ids(30, 'low');
    const granted = await Promise.all(requests.map((id) => store.reserve(orgId, id, 2000)));
    expect(granted.filter(Boolean)).toHaveLength(25); // 50,000 / 2,000, and not one more
    expect(await slicesOf(orgId)).toEqual([]);
    for (const [i, id] of requests.entries()) if (granted[i]) await store.settle(id, 2000);
    await store.insertLogs(requests.filter((_, i) => granted[i]).map((id) => rowFor(id, orgId, 2000)));
    expect(await orgRow(orgId)).toBe(0);
  }));

  it('never lets two instances overdraw an org: each reserves against its own slice, and the row refuses what no slice holds', async () => {
    const a = await instance();
    const b = await instance();
    try {
      // 9 slices: a top-up each leaves 7 on the row, below the low water: the rest is reserved on the row.
      const org = await a.createOrg('slice-two', 9 * SLICE, 'standard');
      const requests = ids(120, 'two');
      const granted = await Promise.all(requests.map((id, i) => (i % 2 ? a : b).reserve(org.id, id, 1000)));
      expect(granted.filter(Boolean)).toHaveLength(90);
      for (const [i, id] of requests.entries()) if (granted[i]) await (i % 2 ? a : b).settle(id, 1000);
      await a.insertLogs(requests.filter((_, i) => granted[i] && i % 2).map((id) => rowFor(id, org.id, 1000)));
      await b.insertLogs(requests.filter((_, i) => granted[i] && !(i % 2)).map((id) => rowFor(id, org.id, 1000)));
      expect(await a.sumCharges(org.id)).toBe(9 * SLICE);
      await expectExact(a, org.id);
    } finally {
      await a.close();
      await b.close();
    }
    expect(await pgQuery(url, 'SELECT 1 FROM balance_slices')).toEqual([]);
  });

  it('gives the free part of a slice back at a heartbeat when it went unused since the last one', () => withOrg('slice-idle', 1_000_000, async (store, orgId) => {
    await serve(store, orgId, ids(3, 'idle'), 1000, 700);
    expect(await slicesOf(orgId)).toEqual([{ instance_id: store.ledger!.instanceId, amount: SLICE - 2100 }]);
    await store.ledger!.heartbeat(); // used since the last heartbeat: kept
    expect((await slicesOf(orgId))[0]?.amount).toBe(SLICE - 2100);
    await store.ledger!.heartbeat(); // unused since: the free part goes back to the org
    expect((await slicesOf(orgId))[0]?.amount).toBe(0);
    expect(await orgRow(orgId)).toBe(1_000_000 - 2100);
    // And the next request takes a new slice.
    await serve(store, orgId, ids(1, 'idle-again'), 1000, 700);
    expect((await slicesOf(orgId))[0]?.amount).toBe(SLICE - 700);
  }));

  it('a slice the reaper took while its instance was silent: the charges not yet written are charged late, from the org, once', async () => {
    const silent = await instance();
    // Another instance whose clock is past the window, so the silent one's slice is old enough to reap.
    const reaper = await instance(() => Date.now() + 2 * TIMEOUT);
    try {
      const org = await silent.createOrg('slice-reaped', 1_000_000, 'standard');
      const requests = ids(4, 'reaped');
      expect((await Promise.all(requests.map((id) => silent.reserve(org.id, id, 1000)))).every(Boolean)).toBe(true);
      for (const id of requests) await silent.settle(id, 600);
      // The silent instance's heartbeat stops: the reaper returns its whole slice to the org.
      await pgQuery(url, 'DELETE FROM gateway_instances WHERE id = $1', [silent.ledger!.instanceId]);
      expect(await reaper.ledger!.reap()).toBeGreaterThan(0);
      expect(await slicesOf(org.id)).toEqual([]);
      expect(await orgRow(org.id)).toBe(1_000_000);
      // Back, it finds its slice gone and drops it; its settled charges are written late, each once.
      await silent.ledger!.heartbeat();
      await silent.insertLogs(requests.map((id) => rowFor(id, org.id, 600)));
      await silent.insertLogs(requests.map((id) => rowFor(id, org.id, 600)));
      expect(await silent.sumCharges(org.id)).toBe(4 * 600);
      expect(await orgRow(org.id)).toBe(1_000_000 - 4 * 600);
      await expectExact(silent, org.id);
    } finally {
      await silent.close();
      await reaper.close();
    }
  });

  it('a batch written, then applied again (a spill replayed), charges its slice once', () => withOrg('slice-replay', 1_000_000, async (store, orgId) => {
    const requests = ids(5, 'replay');
    expect((await Promise.all(requests.map((id) => store.reserve(orgId, id, 1000)))).every(Boolean)).toBe(true);
    for (const id of requests) await store.settle(id, 400);
    const settlements = store.settlementsFor(requests);
    expect(settlements.every((s) => s.slice === store.ledger!.instanceId)).toBe(true);
    const rows = requests.map((id) => rowFor(id, orgId, 400));
    await store.insertLogs(rows);
    store.adoptSettlements(settlements);
    await store.insertLogs(rows);
    expect(await store.sumCharges(orgId)).toBe(5 * 400);
    expect((await slicesOf(orgId))[0]?.amount).toBe(SLICE - 5 * 400);
  }));
});
