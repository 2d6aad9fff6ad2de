import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { MAX_BALANCE_MICROS } from '../lib/money.js';
import { drivers, type DriverEnv } from './drivers.testkit.js';
import { openStore } from './index.js';
import { rawQuery } from './raw.testkit.js';
import { CreditRefusedError, type Store } from './types.js';

/*
 * Issue 27, finding 3: credits past 2^53 µUSD. On PostgreSQL a top-up that took the
 * balance past it committed, then its read-back failed (400 with the credit kept), and
 * every read of the org and every org list answered 500. On SQLite the balance lost
 * precision (balance and ledger apart by 1 µUSD). Every credit is bounded now by
 * MAX_BALANCE_MICROS, refused before writing; reads survive a value stored past it.
 */
describe.each(drivers)('$name: balances stay in the safe range', ({ setup }) => {
  const SAFE = Number.MAX_SAFE_INTEGER; // 9,007,199,254.740991 USD, as the finding topped up
  let env: DriverEnv;
  let store: Store;
  let url: string;
  beforeAll(async () => {
    env = setup();
    url = env.url('bounds');
    store = openStore(url, () => 1_700_000_000_000, {
      server: true, postgres: { poolSize: 4, instanceTimeoutMs: 60_000, reservationMaxAgeMs: 600_000, balanceSliceMicros: 0 },
    });
    await store.ping();
  });
  afterAll(async () => {
    await store?.close();
    await env?.teardown();
  });

  async function expectExact(orgId: string): Promise<void> {
    const a = await store.audit(orgId);
    expect(a.credited - a.balance - a.held).toBe(a.charged);
    expect(a.balance).toBeLessThanOrEqual(MAX_BALANCE_MICROS);
  }

  it('refuses, before writing, a top-up past the maximum; tops up to it exactly; balance == ledger', async () => {
    const org = await store.createOrg(`org ${newId('o')}`, 0, 'standard');
    await expect(store.addCredits(org.id, SAFE, 'first')).rejects.toBeInstanceOf(CreditRefusedError);
    expect(await store.addCredits(org.id, MAX_BALANCE_MICROS - 1, 'almost all')).toBe(MAX_BALANCE_MICROS - 1);
    await expect(store.addCredits(org.id, 2, 'one too many')).rejects.toThrow(/at most \$1000000000\.000000.*at most \$0\.000001 can be added now/);
    expect(await store.addCredits(org.id, 1, 'to the limit')).toBe(MAX_BALANCE_MICROS);
    await expect(store.addCredits(org.id, SAFE, 'again')).rejects.toBeInstanceOf(CreditRefusedError);
    expect(await store.addCredits(org.id, -1, 'debit')).toBe(MAX_BALANCE_MICROS - 1);
    expect(await store.addCredits(org.id, -1, 'debit')).toBe(MAX_BALANCE_MICROS - 2);
    expect(await store.addCredits(org.id, 2, 'back up')).toBe(MAX_BALANCE_MICROS);
    expect((await store.tenancy.listCredits(org.id, 100)).map((c) => c.amountMicros)).toEqual([2, -1, -1, 1, MAX_BALANCE_MICROS - 1]);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(MAX_BALANCE_MICROS);
    await expectExact(org.id);
    await expect(store.createOrg(`org ${newId('o')}`, MAX_BALANCE_MICROS + 1, 'standard')).rejects.toBeInstanceOf(CreditRefusedError);
  });

  it('keeps every read answering when a balance past the safe range is stored (by hand, or by an older version)', async () => {
    const org = await store.createOrg(`org ${newId('o')}`, 5, 'standard');
    await rawQuery(url, `UPDATE orgs SET balance_micros = ${SAFE} * 2 WHERE id = ?`, [org.id]);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(SAFE);
    expect((await store.findOrgByName(org.name))?.balanceMicros).toBe(SAFE);
    expect((await store.tenancy.listOrgs(null)).find((o) => o.org.id === org.id)?.org.balanceMicros).toBe(SAFE);
    await expect(store.addCredits(org.id, 1, 'more')).rejects.toBeInstanceOf(CreditRefusedError);
    expect((await store.tenancy.listCredits(org.id, 10)).map((c) => c.amountMicros)).toEqual([5]);
  });
});
