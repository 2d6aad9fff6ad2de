import { afterAll, beforeAll } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import type { LimitSpec } from '../src/model/limits.js';
import { openStore } from '../src/store/index.js';
import type { Store } from '../src/store/types.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { killAll } from './cli-helpers.js';
import { pgQuery, sharedPostgresSchema, startFleet, startPrivatePostgres, type Fleet, type PrivatePostgres, type PrivateRedis, startPrivateRedis } from './fleet.js';
import { expectLedgersExactAt, tempDir } from './harness.js';

/*
 * The setup every fleet test file repeated: a simulator, a database (a schema of the shared
 * PostgreSQL, or a private cluster a test may restart), optionally a private Redis, `n`
 * gateway processes on them and a Store for the test's own writes — started in beforeAll,
 * stopped in afterAll in the reverse order (the fleet first, the database last). A test
 * file's own afterAll registered after `fleetSuite(…)` runs before this one.
 */

export interface FleetSuiteOptions {
  /** How many gateway processes (3 unless told). */
  n?: number;
  /** A schema of the shared PostgreSQL, by this name; without it a private cluster (`suite.pg`). */
  schema?: string;
  /** Start a private Redis (`suite.redis`). */
  privateRedis?: boolean;
  /** The prefix of the temp folder for the config. */
  dir?: string;
  /** The fleet's Redis, when it is not the private one. */
  redisUrl?: string;
  /** Extra gateway.yaml, given the simulator, database and Redis URLs. */
  yaml?: (urls: { sim: string; db: string; redis: string | undefined }) => Record<string, unknown>;
  /** Open a Store on the database (`suite.store`). */
  store?: boolean;
  /** After the fleet stopped: every org's balance change equals its logged costs. */
  checkLedgers?: boolean;
}

export interface FleetSuite {
  sim: Simulator;
  /** The database the fleet uses. */
  db: { url: string; drop(): Promise<void> };
  /** Set when the database is a private cluster. */
  pg: PrivatePostgres;
  redis: PrivateRedis;
  fleet: Fleet;
  store: Store;
}

/** Registers the beforeAll/afterAll of a fleet test file; the returned object is filled in beforeAll. */
export function fleetSuite(opts: FleetSuiteOptions): FleetSuite {
  const s: Partial<FleetSuite> = {};
  beforeAll(async () => {
    s.sim = await startSimulator({ port: 0 });
    if (opts.privateRedis) s.redis = await startPrivateRedis();
    if (opts.schema) s.db = sharedPostgresSchema(opts.schema);
    else {
      const pg = await startPrivatePostgres();
      s.pg = pg;
      s.db = { url: pg.url, drop: () => pg.stop() };
    }
    const redisUrl = opts.redisUrl ?? s.redis?.url;
    s.fleet = await startFleet({
      n: opts.n ?? 3, dir: tempDir(opts.dir), simUrl: s.sim.url, databaseUrl: s.db.url, redisUrl,
      yaml: opts.yaml?.({ sim: s.sim.url, db: s.db.url, redis: redisUrl }),
    });
    if (opts.store) s.store = openStore(s.db.url);
  }, 180_000);
  afterAll(async () => {
    await s.fleet?.stop();
    await killAll();
    await s.store?.close();
    if (opts.checkLedgers && s.db && s.fleet) await expectLedgersExactAt(s.db.url);
    await s.redis?.stop();
    await s.db?.drop();
    await s.sim?.close();
  });
  return s as FleetSuite;
}

export interface Reply { status: number; headers: Headers; body: { error?: { code: string }; usage?: { cost_usd_total: number } } }

/** A non-streamed chat request of `maxTokens` with its status, headers and parsed body. */
export async function chatReply(url: string, key: string, content: string, maxTokens = 20, timeoutMs = 20_000): Promise<Reply> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', signal: AbortSignal.timeout(timeoutMs),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: maxTokens }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] };
}

/** A new org (5 USD, named `<prefix>-<n>`) and a key with these limits. */
export function keyMaker(suite: FleetSuite, prefix: string): (limits: LimitSpec) => Promise<{ key: string; keyId: string; orgId: string }> {
  let orgs = 0;
  return async (limits) => {
    const org = await createOrg(suite.store, `${prefix}-${++orgs}`, '5', 'standard');
    const { key, record } = await createKey(suite.store, org.name, { limits });
    return { key, keyId: record.id, orgId: org.id };
  };
}

/** Waits (bounded) for the instances to write `requests` log rows of the key; returns their cost sum and the org's balance. */
export async function logSettled(dbUrl: string, keyId: string, orgId: string, requests: number): Promise<{ logged: number; balance: number; rows: number }> {
  let row = { n: '0', logged: '0' };
  for (let i = 0; i < 200 && Number(row.n) < requests; i++) {
    [row] = await pgQuery<{ n: string; logged: string }>(dbUrl, 'SELECT COUNT(*) AS n, COALESCE(SUM(cost_micros), 0) AS logged FROM request_logs WHERE api_key_id = $1', [keyId]) as [typeof row];
    if (Number(row.n) < requests) await new Promise((r) => setTimeout(r, 50));
  }
  const [org] = await pgQuery<{ balance: string }>(dbUrl, 'SELECT balance_micros AS balance FROM orgs WHERE id = $1', [orgId]);
  return { logged: Number(row.logged), balance: Number(org!.balance), rows: Number(row.n) };
}
