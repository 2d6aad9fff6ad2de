import { describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { drivers, useStorePair } from './drivers.testkit.js';
import { logIdOf, type MediaRecord } from './media.js';

const DAY = 86_400_000;

function record(orgId: string, createdAt: number, over: Partial<MediaRecord> = {}): MediaRecord {
  const requestId = newId('req');
  return {
    id: logIdOf(requestId), requestId, orgId, modality: 'music', model: 'tune-3-clip-preview', usedModel: 'lyria-3-clip-preview',
    usedProvider: 'google', prompt: 'lofi beats', text: '[0.0:] <intro>', storage: 's3', objectKey: `music/${orgId}/${requestId}.mp3`,
    bytes: 1234, mimeType: 'audio/mpeg', costMicros: 50_000, error: false, errorCode: null, createdAt, expiresAt: createdAt + 30 * DAY,
    cleanedAt: null, meta: { response_format: 'mp3' }, ...over,
  };
}

describe.each(drivers)('$name media and leases', ({ setup }) => {
  const db = useStorePair(setup, 'media');

  it('writes a record and reads it back by log id and by request id', async () => {
    const r = record('org_a', 1000);
    await db.store.media.put(r);
    expect(await db.other.media.get(r.id)).toEqual(r);
    expect(await db.other.media.get(r.requestId)).toEqual(r);
    expect(await db.store.media.get('req_nope')).toBeUndefined();
  });

  it("lists an org's records of a modality newest first, limited, and never another org's", async () => {
    const org = newId('org');
    for (let i = 0; i < 5; i++) await db.store.media.put(record(org, 10_000 + i));
    await db.store.media.put(record(newId('org'), 20_000));
    await db.store.media.put(record(org, 30_000, { modality: 'speech' }));
    const list = await db.store.media.list(org, 'music', 3);
    expect(list.map((r) => r.createdAt)).toEqual([10_004, 10_003, 10_002]);
    expect(list.every((r) => r.orgId === org)).toBe(true);
  });

  it('finds hosted records past expiry until they are marked cleaned', async () => {
    const org = newId('org');
    const old = record(org, 0, { expiresAt: 5 * DAY });
    const fresh = record(org, 0, { expiresAt: 50 * DAY });
    const inline = record(org, 0, { storage: 'inline', objectKey: null, expiresAt: null });
    for (const r of [old, fresh, inline]) await db.store.media.put(r);
    const due = (await db.store.media.listExpired(10 * DAY, 100)).filter((r) => r.orgId === org);
    expect(due.map((r) => r.id)).toEqual([old.id]);
    await db.store.media.markCleaned(old.id, 10 * DAY);
    expect((await db.store.media.get(old.id))?.cleanedAt).toBe(10 * DAY);
    expect((await db.store.media.listExpired(10 * DAY, 100)).filter((r) => r.orgId === org)).toEqual([]);
    // One modality's sweep sees only its own records.
    const image = record(org, 0, { modality: 'image', expiresAt: DAY });
    await db.store.media.put(image);
    expect((await db.store.media.listExpired(10 * DAY, 100, 'music')).filter((r) => r.orgId === org)).toEqual([]);
    expect((await db.store.media.listExpired(10 * DAY, 100, 'image')).filter((r) => r.orgId === org).map((r) => r.id)).toEqual([image.id]);
  });

  it('lets exactly one of many concurrent sweeps claim an expired record; a claim hides it until cleaned, given up or run out', async () => {
    const org = newId('org');
    const r = record(org, 0, { expiresAt: DAY });
    await db.store.media.put(r);
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? db.store : db.other).media.claim(r.id, 2 * DAY, 2 * DAY + 1000)));
    expect(claims.filter(Boolean).map((c) => c?.objectKey)).toEqual([r.objectKey]);
    const due = async (at: number) => (await db.store.media.listExpired(at, 100, 'music')).filter((x) => x.orgId === org).map((x) => x.id);
    expect(await due(2 * DAY)).toEqual([]);
    // Given up (its delete failed): listed and claimable again.
    await db.store.media.unclaim(r.id);
    expect(await due(2 * DAY)).toEqual([r.id]);
    expect(await db.other.media.claim(r.id, 2 * DAY, 2 * DAY + 1000)).toBeDefined();
    // A claimer that crashed: claimable again once its claim ran out, never before.
    expect(await db.store.media.claim(r.id, 2 * DAY + 999, 2 * DAY + 5000)).toBeUndefined();
    expect(await due(2 * DAY + 1000)).toEqual([r.id]);
    expect(await db.store.media.claim(r.id, 2 * DAY + 1000, 2 * DAY + 5000)).toBeDefined();
    await db.store.media.markCleaned(r.id, 2 * DAY + 2000);
    expect(await db.other.media.claim(r.id, 3 * DAY, 3 * DAY + 1000)).toBeUndefined();
    expect(await db.store.media.get(r.id)).toEqual({ ...r, cleanedAt: 2 * DAY + 2000 });
  });

  it('blanks prompt and text older than the log-text retention, keeping the rest', async () => {
    const org = newId('org');
    const old = record(org, 100);
    const recent = record(org, 10_000_000);
    await db.store.media.put(old);
    await db.store.media.put(recent);
    expect(await db.store.media.clearText(200)).toBeGreaterThanOrEqual(1);
    expect(await db.store.media.get(old.id)).toMatchObject({ prompt: null, text: null, costMicros: 50_000 });
    expect((await db.store.media.get(recent.id))?.prompt).toBe('lofi beats');
  });

  it('gives a lease to one holder at a time until it expires or is released', async () => {
    const name = newId('lease');
    expect(await db.store.leases.tryAcquire(name, 'a', 1000, 0)).toBe(true);
    expect(await db.other.leases.tryAcquire(name, 'b', 1000, 500)).toBe(false);
    expect(await db.store.leases.tryAcquire(name, 'a', 1000, 600)).toBe(true); // renewal by its holder
    expect(await db.other.leases.tryAcquire(name, 'b', 1000, 1599)).toBe(false);
    expect(await db.other.leases.tryAcquire(name, 'b', 1000, 1600)).toBe(true); // expired
    await db.other.leases.release(name, 'b');
    expect(await db.store.leases.tryAcquire(name, 'a', 1000, 1700)).toBe(true);
  });

  it('grants a contested lease to exactly one of many concurrent callers', async () => {
    const name = newId('lease');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? db.store : db.other).leases.tryAcquire(name, `h${i}`, 60_000, 0)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});
