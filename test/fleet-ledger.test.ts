import { beforeAll, describe, expect, it } from 'vitest';
import { chat, cli, lastLine, sleep } from './cli-helpers.js';
import { pgQuery, roundRobin } from './fleet.js';
import { fleetSuite } from './fleet-suite.js';

/*
 * Issue 14, findings 1–3 and 5: three gateway processes on one (private) PostgreSQL, each
 * reserving against its own slice of the org's balance. One is
 * killed with SIGKILL under load: the reaper releases what it held within its window, and
 * what it had served but not written is gone together (no charge without its row). Then
 * the database restarts under load: every reply answered 200 has exactly one row (by its
 * x-request-id), no instance exits (a connection cut inside a transaction once made pg emit
 * an unheard 'error' that killed the process, and its queued rows with it), nothing stays
 * held. A graceful stop gives every slice back. After each, for the org: credited − balance
 * = Σ charges = Σ logged costs, to the µUSD.
 */

const WINDOW_MS = 1000;

describe('a fleet on one PostgreSQL keeps an exact ledger through crashes', () => {
  const suite = fleetSuite({ yaml: ({ db }) => ({ database: { url: db, instance_timeout_ms: WINDOW_MS }, log: { level: 'warn', flush_interval_ms: 50 } }) });
  let key = '';
  beforeAll(async () => {
    expect((await cli(['orgs', 'create', 'crash', '--credits', '20', '--config', suite.fleet.config])).code).toBe(0);
    key = lastLine((await cli(['keys', 'create', '--org', 'crash', '--config', suite.fleet.config])).stdout);
  });

  /**
   * The org's ledger, straight from the database. Its balance includes every slice of it
   * (balance slices: money instances took to reserve against in memory, not charged), live or
   * not. `held` is what waits for the reaper: reservations, and the slices of instances whose
   * heartbeat stopped (a live instance late with its heartbeat under load also shows there
   * for a moment, so `held` is waited on, never read once).
   */
  const audit = async (): Promise<{ credited: number; balance: number; held: number; charged: number; logged: number; rows: number }> => {
    const live = `SELECT id FROM gateway_instances WHERE heartbeat_at >= (extract(epoch from clock_timestamp()) * 1000)::bigint - ${WINDOW_MS}`;
    const [row] = await pgQuery<Record<string, string>>(suite.db.url, `SELECT o.balance_micros
          + (SELECT COALESCE(SUM(amount_micros), 0) FROM balance_slices WHERE org_id = o.id) AS balance,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE org_id = o.id AND kind = 'credit') AS credited,
        (SELECT COALESCE(SUM(-amount_micros), 0) FROM ledger WHERE org_id = o.id AND kind = 'charge') AS charged,
        (SELECT COALESCE(SUM(cost_micros), 0) FROM request_logs WHERE org_id = o.id) AS logged,
        (SELECT COUNT(*) FROM request_logs WHERE org_id = o.id) AS rows,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM reservations WHERE org_id = o.id)
          + (SELECT COALESCE(SUM(amount_micros), 0) FROM balance_slices WHERE org_id = o.id AND instance_id NOT IN (${live})) AS held
      FROM orgs o WHERE o.name = 'crash'`);
    return Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)])) as never;
  };

  /** Bounded wait until no reservation is held (the reaper's window, plus its tick and slack). */
  const heldAfterReaper = async (): Promise<number> => {
    let held = (await audit()).held;
    for (let i = 0; i < 60 && held !== 0; i++) {
      await sleep(100);
      held = (await audit()).held;
    }
    return held;
  };

  const load = (urls: string[], total: number, onProgress: (done: number) => void): Promise<Array<{ status: number; requestId: string | null }>> => {
    let done = 0;
    return roundRobin(urls, total, 12, async (url) => {
      try {
        const r = await chat(url, key);
        return { status: r.status, requestId: r.requestId };
      } catch {
        return { status: 0, requestId: null }; // the killed instance's connections
      } finally {
        onProgress(++done);
      }
    });
  };

  /**
   * What the database holds for these request ids: those without a log row (each with its
   * ledger charge, if any, and whether a reservation is still held) and those with more than one.
   */
  const rowsOf = async (ids: string[]): Promise<{ missing: Array<{ id: string; charged: number | null; held: boolean }>; duplicated: string[] }> => {
    const found = await pgQuery<{ request_id: string; n: string }>(suite.db.url,
      'SELECT request_id, COUNT(*) AS n FROM request_logs WHERE request_id = ANY($1::text[]) GROUP BY request_id', [ids]);
    const count = new Map(found.map((r) => [r.request_id, Number(r.n)]));
    const missingIds = ids.filter((id) => !count.has(id));
    const charges = new Map((await pgQuery<{ request_id: string; charged: string }>(suite.db.url,
      "SELECT request_id, -amount_micros AS charged FROM ledger WHERE kind = 'charge' AND request_id = ANY($1::text[])", [missingIds])).map((r) => [r.request_id, Number(r.charged)]));
    const held = new Set((await pgQuery<{ request_id: string }>(suite.db.url, 'SELECT request_id FROM reservations WHERE request_id = ANY($1::text[])', [missingIds])).map((r) => r.request_id));
    return {
      missing: missingIds.map((id) => ({ id, charged: charges.get(id) ?? null, held: held.has(id) })),
      duplicated: [...count].filter(([, n]) => n !== 1).map(([id]) => id),
    };
  };

  it('SIGKILL of one instance under load: its reservations are released within the window, and the ledger equals the log', async () => {
    const urls = suite.fleet.urls();
    let killed: Promise<void> | undefined;
    let slicesAtKill = 0;
    const replies = await load(urls, 150, (done) => {
      // Every instance reserves against its own slice of the org by then; the killed one's is returned by the reaper.
      if (done === 40) {
        killed = pgQuery<{ n: string }>(suite.db.url, 'SELECT COUNT(DISTINCT instance_id) AS n FROM balance_slices WHERE amount_micros > 0')
          .then(([r]) => { slicesAtKill = Number(r?.n); })
          .then(() => suite.fleet.kill(2));
      }
    });
    await killed;
    expect(slicesAtKill).toBe(3);
    expect(replies.filter((r) => r.status === 200).length).toBeGreaterThan(100);
    expect(await heldAfterReaper()).toBe(0);
    const a = await audit();
    expect(a.logged).toBeGreaterThan(0);
    expect(a.charged).toBe(a.logged);
    expect(a.credited - a.balance).toBe(a.logged);
  }, 60_000);

  it('a database restart under load: every 200 reply has exactly one row, nothing served goes uncharged, nothing stays held', async () => {
    const urls = suite.fleet.urls().slice(0, 2);
    let restarted: Promise<void> | undefined;
    const replies = await load(urls, 120, (done) => {
      if (done === 30) restarted = suite.pg.restart();
    });
    await restarted;
    const served = replies.filter((r) => r.status === 200).map((r) => r.requestId ?? '(no x-request-id)');
    expect(served.length).toBeGreaterThan(0);
    // The rows written before the restart, and those retried after it, are all in once the instances flushed.
    let found = await rowsOf(served);
    for (let i = 0; i < 150 && (found.missing.length > 0 || (await audit()).held !== 0); i++) {
      await sleep(100);
      found = await rowsOf(served);
    }
    const a = await audit();
    const statuses: Record<string, number> = {};
    for (const r of replies) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    // An instance that exited during the restart (its queued rows die with it): what it said on the way out.
    const exited = suite.fleet.instances.slice(0, 2).filter((s) => s.child.exitCode !== null || s.child.signalCode !== null)
      .map((s) => ({ url: s.url, exit: s.child.exitCode ?? s.child.signalCode, stderr: s.stderr().slice(-2000), stdout: s.stdout().slice(-3000) }));
    // On failure this prints which 200 replies have no row (and whether each was charged or is still held).
    expect({ missing: found.missing, duplicated: found.duplicated, held: await heldAfterReaper(), statuses, exited })
      .toEqual({ missing: [], duplicated: [], held: 0, statuses, exited: [] });
    expect({ charged: a.charged, balanceChange: a.credited - a.balance }).toEqual({ charged: a.logged, balanceChange: a.logged });
  }, 60_000);

  it('a graceful stop gives every slice back: no slice rows, and the org row alone moved by the logged costs', async () => {
    await suite.fleet.stop();
    const [slices] = await pgQuery<{ n: string }>(suite.db.url, 'SELECT COUNT(*) AS n FROM balance_slices');
    const [row] = await pgQuery<{ balance: string }>(suite.db.url, "SELECT balance_micros AS balance FROM orgs WHERE name = 'crash'");
    const a = await audit();
    expect({ slices: Number(slices?.n), held: a.held, charged: a.charged, balanceChange: a.credited - Number(row?.balance) })
      .toEqual({ slices: 0, held: 0, charged: a.logged, balanceChange: a.logged });
  }, 60_000);
});
