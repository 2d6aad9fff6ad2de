import { describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { drivers, useStorePair } from './drivers.testkit.js';
import type { StoredRecord } from './records.js';

const rec = (orgId: string, id: string, createdAt: number, over: Partial<StoredRecord> = {}): StoredRecord => ({
  kind: 'response', id, orgId, data: { output: [{ type: 'message', text: 'hi \u0000 there' }], n: createdAt }, createdAt, expiresAt: createdAt + 1000, ...over,
});

describe.each(drivers)('$name org records', ({ setup }) => {
  const db = useStorePair(setup, 'records');

  it('writes a record another instance reads back, JSON intact (a NUL escape included)', async () => {
    const org = newId('org');
    const r = rec(org, newId('resp'), 100);
    await db.store.records.put(r, 10);
    expect(await db.other.records.get('response', org, r.id, 150)).toEqual(r);
  });

  it("never returns another org's record, another kind's, or an expired one", async () => {
    const org = newId('org');
    const r = rec(org, newId('resp'), 100);
    await db.store.records.put(r, 10);
    expect(await db.store.records.get('response', newId('org'), r.id, 150)).toBeUndefined();
    expect(await db.store.records.get('other', org, r.id, 150)).toBeUndefined();
    expect(await db.store.records.get('response', org, r.id, r.expiresAt)).toBeUndefined();
    expect(await db.store.records.get('response', org, r.id, r.expiresAt - 1)).toBeDefined();
  });

  it("keeps at most `keep` records per org and kind, dropping the oldest, and leaves other orgs' alone", async () => {
    const org = newId('org');
    const bystander = rec(newId('org'), newId('resp'), 1);
    await db.store.records.put(bystander, 2);
    const ids = [newId('resp'), newId('resp'), newId('resp'), newId('resp')];
    for (const [i, id] of ids.entries()) await db.store.records.put(rec(org, id, 10 + i), 2);
    const left = await Promise.all(ids.map((id) => db.store.records.get('response', org, id, 20)));
    expect(left.map((r) => r !== undefined)).toEqual([false, false, true, true]);
    expect(await db.store.records.get('response', bystander.orgId, bystander.id, 2)).toBeDefined();
    // Replacing a record keeps one copy.
    await db.store.records.put(rec(org, ids[3] as string, 14, { data: { v: 2 } }), 2);
    expect((await db.store.records.get('response', org, ids[3] as string, 20))?.data).toEqual({ v: 2 });
    expect(await db.store.records.get('response', org, ids[2] as string, 20)).toBeDefined();
  });

  it("deletes only the org's own record, and expired records in bounded batches", async () => {
    const org = newId('org');
    const r = rec(org, newId('resp'), 100);
    await db.store.records.put(r, 10);
    expect(await db.store.records.delete('response', newId('org'), r.id)).toBe(false);
    expect(await db.store.records.delete('response', org, r.id)).toBe(true);
    expect(await db.store.records.delete('response', org, r.id)).toBe(false);
    const far = 10_000_000_000;
    for (let i = 0; i < 3; i++) await db.store.records.put(rec(org, newId('resp'), far + i, { expiresAt: far + 10 }), 10);
    await db.store.records.put(rec(org, newId('resp'), far, { expiresAt: far + 1000 }), 10);
    let deleted = 0;
    for (let i = 0; i < 5; i++) deleted += await db.store.records.deleteExpired(far + 10, 2);
    expect(deleted).toBeGreaterThanOrEqual(3);
    expect(await db.store.records.deleteExpired(far + 10, 2)).toBe(0);
  });
});
