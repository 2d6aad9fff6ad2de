import { describe, expect, it, vi } from 'vitest';
import { newExchange } from './exchange.js';
import type { Admission } from './admission.js';
import { RequestLifecycle } from './request-lifecycle.js';
import type { LogRow } from '../store/types.js';

/* The lifecycle's own bookkeeping: the cost rounded once, each part settled once, one row. */

function lifecycle(reserved = 0) {
  const rows: LogRow[] = [];
  const store = { reserve: vi.fn(async () => true), settle: vi.fn(async (_id: string, cost: number) => cost) };
  const ex = newExchange('req_life00000000000000000', 'chat', Date.now());
  ex.reservedMicros = reserved;
  const life = new RequestLifecycle(ex, { store, telemetry: undefined, log: { enqueue: (r) => void rows.push(r) } });
  const limits = { settle: vi.fn(async () => undefined), release: vi.fn(async () => undefined) } satisfies Admission;
  life.admitted(limits);
  return { ex, life, store, limits, rows };
}

describe('RequestLifecycle', () => {
  it('records a result: pico-USD rounded half to even once, micro-USD taken as the plugin rounded them', () => {
    const a = lifecycle();
    a.life.record({ costPicos: 2_500_000n, usage: { input: 3, output: 4, cachedInput: 0, reasoning: 0 }, extra: { flagged: true } });
    expect(a.ex).toMatchObject({ costMicros: 2, costEstimated: false, usage: { input: 3, output: 4 }, extra: { flagged: true } });
    const b = lifecycle();
    b.life.record({ costMicros: 7, estimated: true, errorCode: 'client_closed_request' });
    expect(b.ex).toMatchObject({ costMicros: 7, costEstimated: true, errorCode: 'client_closed_request' });
  });

  it('settles the credit and the limits once, however often finish is called', async () => {
    const { life, store, limits } = lifecycle(100);
    life.record({ costMicros: 40 });
    await life.finish(true);
    await life.finish(false);
    expect(store.settle).toHaveBeenCalledTimes(1);
    expect(store.settle).toHaveBeenCalledWith('req_life00000000000000000', 40);
    expect(limits.settle).toHaveBeenCalledTimes(2); // the admission's own flag makes the second a no-op
    expect(limits.release).not.toHaveBeenCalled();
  });

  it('a failure with nothing owed settles at 0 and releases the limits', async () => {
    const { life, store, limits } = lifecycle(100);
    await life.finish(false);
    expect(store.settle).toHaveBeenCalledWith('req_life00000000000000000', 0);
    expect(limits.release).toHaveBeenCalledTimes(1);
    expect(limits.settle).not.toHaveBeenCalled();
  });

  it('queues one row, whatever calls log, with what was recorded', async () => {
    const { life, rows } = lifecycle();
    life.record({ costMicros: 5 });
    await life.log(200);
    expect(life.log(499)).toBeUndefined();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 200, costMicros: 5 });
  });
});

describe('RequestLifecycle.meter', () => {
  it("bills a reply whose plugin threw after it started at the meter's running bill, once", async () => {
    const { ex, life, store, limits } = lifecycle(100);
    life.meter.sofar(() => ({ costMicros: 12, estimated: true, errorCode: 'upstream_error' }));
    await life.finish(false);
    expect(store.settle).toHaveBeenCalledWith('req_life00000000000000000', 12);
    expect(ex).toMatchObject({ costMicros: 12, costEstimated: true, errorCode: 'upstream_error' });
    expect(limits.settle).toHaveBeenCalledTimes(1);
  });

  it('leaves a returned result alone: the meter is only for a throw', async () => {
    const { ex, life, store } = lifecycle(100);
    const sofar = vi.fn(() => ({ costMicros: 99 }));
    life.meter.sofar(sofar);
    life.record({ costMicros: 30 });
    await life.finish(false); // the settle's retry after a store error
    expect(sofar).not.toHaveBeenCalled();
    expect(store.settle).toHaveBeenCalledWith('req_life00000000000000000', 30);
    expect(ex.costMicros).toBe(30);
  });
});
