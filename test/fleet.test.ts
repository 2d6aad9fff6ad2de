import { describe, expect, it } from 'vitest';
import { chat, cli, lastLine } from './cli-helpers.js';
import { pgQuery, roundRobin } from './fleet.js';
import { fleetSuite } from './fleet-suite.js';

/* The multi-instance harness itself: two processes on a private PostgreSQL share one ledger. */
describe('fleet harness', () => {
  const suite = fleetSuite({ n: 2 });

  it('serves one org from two instances, and the balance moves by exactly the logged costs', async () => {
    expect((await cli(['orgs', 'create', 'fleet', '--credits', '5', '--config', suite.fleet.config])).code).toBe(0);
    const key = lastLine((await cli(['keys', 'create', '--org', 'fleet', '--config', suite.fleet.config])).stdout);
    const replies = await roundRobin(suite.fleet.urls(), 20, 4, (url) => chat(url, key));
    expect(replies.map((r) => r.status)).toEqual(new Array(20).fill(200));
    await suite.fleet.stop();
    const [row] = await pgQuery<{ balance: string; logged: string; n: string }>(suite.db.url,
      `SELECT o.balance_micros AS balance, (SELECT COALESCE(SUM(cost_micros),0) FROM request_logs WHERE org_id = o.id) AS logged,
              (SELECT COUNT(*) FROM request_logs WHERE org_id = o.id) AS n FROM orgs o WHERE o.name = 'fleet'`);
    expect(Number(row!.n)).toBe(20);
    expect(Number(row!.logged)).toBeGreaterThan(0);
    expect(5_000_000 - Number(row!.balance)).toBe(Number(row!.logged));
  }, 120_000);
});
