import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newExchange } from './exchange.js';
import { RequestLifecycle } from './request-lifecycle.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';

/* `RequestLifecycle.settleCredit`, the one place a request's reservation becomes its charge. */

const dirs: string[] = [];
const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function reserved(amount: number) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-settle-'));
  dirs.push(dir);
  const store = openStore(`sqlite:${join(dir, 'g.db')}`);
  stores.push(store);
  const org = await store.createOrg('o', 1_000_000, 'standard');
  const ex = newExchange('req_settle0000000000000000', 'chat', Date.now());
  expect(await store.reserve(org.id, ex.id, amount)).toBe(true);
  ex.reservedMicros = amount;
  const life = new RequestLifecycle(ex, { store, telemetry: undefined, log: { enqueue: () => undefined } });
  return { store, org, ex, life };
}

describe('settle', () => {
  it('leaves the exchange unsettled when the store call throws, so the next settle charges it, once', async () => {
    const { store, org, ex, life } = await reserved(1000);
    const spy = vi.spyOn(store, 'settle').mockRejectedValueOnce(new Error('connection lost'));
    await expect(life.settleCredit(400)).rejects.toThrow('connection lost');
    expect(life.settled).toBe(false);
    expect(await store.audit(org.id)).toMatchObject({ held: 1000, charged: 0, balance: 999_000 });

    await life.settleCredit(400);
    expect(life.settled).toBe(true);
    await life.settleCredit(400); // a later call (the pipeline's catch) changes nothing
    expect(spy).toHaveBeenCalledTimes(2);
    expect(await store.audit(org.id)).toMatchObject({ held: 0, charged: 400, balance: 1_000_000 - 400 });
    expect(ex.costMicros).toBe(0); // not rewritten: the charge was not capped
  });

  it('records what the reservation could not cover, as before', async () => {
    const { store, org, ex, life } = await reserved(300);
    ex.costMicros = 500;
    await life.settleCredit(500);
    expect(life.settled).toBe(true);
    expect(ex).toMatchObject({ costMicros: 300, extra: { uncharged_micros: 200 } });
    expect(await store.audit(org.id)).toMatchObject({ held: 0, charged: 300 });
  });
});
