import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { drivers, type DriverEnv } from './drivers.testkit.js';
import { openStore } from './index.js';
import type { LogRow, Store } from './types.js';

/*
 * Issue 27, finding 4: an operator's debit while a request holds credit. On SQLite the
 * gateway's reservations live in memory and the stored balance still includes them; the
 * debit checked the stored balance only, took the whole of it, and the request's charge
 * then found nothing to take (balance 0, ledger −20,035 µ$, nothing logged as uncharged).
 * A debit may take only what is not held, on both drivers.
 */
describe.each(drivers)('$name: a debit while a request holds credit', ({ setup }) => {
  const T0 = 1_700_000_000_000;
  let env: DriverEnv;
  let store: Store;
  beforeAll(async () => {
    env = setup();
    // The gateway server's store: on SQLite it owns the ledger (reservations in memory).
    store = openStore(env.url('debit'), () => T0, {
      server: true, postgres: { poolSize: 4, instanceTimeoutMs: 60_000, reservationMaxAgeMs: 600_000, balanceSliceMicros: 0 },
    });
    await store.ping();
  });
  afterAll(async () => {
    await store?.close();
    await env?.teardown();
  });

  const logRow = (requestId: string, orgId: string, costMicros: number): LogRow => ({
    requestId, orgId, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'm', usedModel: 'm', usedProvider: 'p',
    status: 200, errorCode: null, costMicros, costEstimated: false, byok: false, durationMs: 1, ttfbMs: null, prompt: null,
    attempts: [], createdAt: T0, extra: null, promptTokens: null, completionTokens: null,
  });

  it('refuses a debit of the whole balance, allows what is not held, and balance == ledger == logged after the settle', async () => {
    const org = await store.createOrg(`org ${newId('o')}`, 1_000_000, 'standard');
    const req = newId('req');
    expect(await store.reserve(org.id, req, 25_000)).toBe(true);

    await expect(store.addCredits(org.id, -1_000_000, 'take it all')).rejects.toThrow(/held by requests in flight/);
    await expect(store.addCredits(org.id, -975_001, 'one too many')).rejects.toBeInstanceOf(RangeError);
    expect(await store.addCredits(org.id, -975_000, 'all that is free')).toBe(0);

    const charged = await store.settle(req, 20_035);
    expect(charged).toBe(20_035);
    await store.insertLogs([logRow(req, org.id, charged)]);

    const a = await store.audit(org.id);
    expect(a).toEqual({ credited: 1_000_000 - 975_000, balance: 25_000 - 20_035, held: 0, charged: 20_035, logged: 20_035 });
    expect(a.credited - a.balance - a.held).toBe(a.charged);
    expect((await store.getOrg(org.id))?.balanceMicros).toBe(4_965);
  });
});
