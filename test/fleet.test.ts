import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { chat, cli, killAll, lastLine } from './cli-helpers.js';
import { pgQuery, roundRobin, startFleet, startPrivatePostgres, type Fleet, type PrivatePostgres } from './fleet.js';
import { tempDir } from './harness.js';

/* The multi-instance harness itself: two processes on a private PostgreSQL share one ledger. */
describe('fleet harness', () => {
  let sim: Simulator;
  let db: PrivatePostgres;
  let fleet: Fleet;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    db = await startPrivatePostgres();
    fleet = await startFleet({ n: 2, dir: tempDir(), simUrl: sim.url, databaseUrl: db.url });
  }, 120_000);
  afterAll(async () => {
    await fleet?.stop();
    await killAll();
    await db?.stop();
    await sim?.close();
  });

  it('serves one org from two instances, and the balance moves by exactly the logged costs', async () => {
    expect((await cli(['orgs', 'create', 'fleet', '--credits', '5', '--config', fleet.config])).code).toBe(0);
    const key = lastLine((await cli(['keys', 'create', '--org', 'fleet', '--config', fleet.config])).stdout);
    const replies = await roundRobin(fleet.urls(), 20, 4, (url) => chat(url, key));
    expect(replies.map((r) => r.status)).toEqual(new Array(20).fill(200));
    await fleet.stop();
    const [row] = await pgQuery<{ balance: string; logged: string; n: string }>(db.url,
      `SELECT o.balance_micros AS balance, (SELECT COALESCE(SUM(cost_micros),0) FROM request_logs WHERE org_id = o.id) AS logged,
              (SELECT COUNT(*) FROM request_logs WHERE org_id = o.id) AS n FROM orgs o WHERE o.name = 'fleet'`);
    expect(Number(row!.n)).toBe(20);
    expect(Number(row!.logged)).toBeGreaterThan(0);
    expect(5_000_000 - Number(row!.balance)).toBe(Number(row!.logged));
  }, 120_000);
});
