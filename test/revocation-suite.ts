import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, createUser } from '../src/tenancy/admin.js';
import { openStore } from '../src/store/index.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { chat, cli, killAll, sleep } from './cli-helpers.js';
import { pgQuery, roundRobin, sharedPostgresSchema, startFleet, startPrivateRedis, type Fleet, type PrivateRedis } from './fleet.js';
import { expectLedgersExactAt, tempDir } from './harness.js';
import { Api, PASSWORD, sessionCookieOf, type Obj } from './management-helpers.js';

/*
 * (One file per transport, each well under a minute: fleet-revocation-*.test.ts.)
 * Revocation pushed to every instance (issue 14): three gateway processes on one
 * PostgreSQL schema, each caching API keys for 60 s (`cache.ttl_ms`), so that only the
 * push can evict a key within the test: a key revoked in the database without an
 * announcement is still served by every instance (the control below).
 */

const TTL_MS = 60_000;

/**
 * The statuses once the push has reached every instance: a push is delivered asynchronously
 * (NOTIFY and pub/sub hand it to each listener after the sender's commit), so a loaded
 * machine may take a few milliseconds more. Bounded at 2 s, far below the 60 s TTL, so only
 * the push can pass it.
 */
async function settledStatuses(urls: readonly string[], key: string, expected: number): Promise<number[]> {
  let statuses = await stepStatuses(urls, key);
  for (let i = 0; i < 40 && statuses.some((s) => s !== expected); i++) {
    await sleep(50);
    statuses = await stepStatuses(urls, key);
  }
  return statuses;
}

async function stepStatuses(urls: readonly string[], key: string): Promise<number[]> {
  // Bounded: three requests to each instance, one at a time per instance.
  return (await roundRobin(urls, urls.length * 3, urls.length, (url) => chat(url, key))).map((r) => r.status);
}

export function revocationSuite(name: string, withRedis: boolean): void {
  describe(`revocation over ${name}`, () => {
    let sim: Simulator;
    let redis: PrivateRedis | undefined;
    let fleet: Fleet;
    const schema = sharedPostgresSchema(withRedis ? 'revoke_redis' : 'revoke_notify');
    const env = { ...process.env, TOLLGATE_SECRET_KEY: randomBytes(32).toString('base64') }; // the CLI seals provider keys as the servers do
    beforeAll(async () => {
      sim = await startSimulator({ port: 0 });
      redis = withRedis ? await startPrivateRedis() : undefined;
      fleet = await startFleet({ n: 3, dir: tempDir(), simUrl: sim.url, databaseUrl: schema.url, redisUrl: redis?.url, yaml: { cache: { ttl_ms: TTL_MS } }, env });
    }, 120_000); // the first fleet file after a source change builds dist/
    afterAll(async () => {
      try {
        await fleet?.stop();
        await killAll();
        if (fleet) await expectLedgersExactAt(schema.url); // every org, once every instance has stopped
      } finally {
        await redis?.stop();
        await schema.drop();
        await sim?.close();
      }
    }, 30_000);

    it('every instance refuses a key as soon as the CLI or the management API has revoked it', async () => {
      const cfg = ['--config', fleet.config];
      // Set up in this process (faster than three CLI runs); the revocations below go through the CLI and the API.
      const store = openStore(schema.url);
      const [byCli, byApi, control] = await (async () => {
        try {
          await createOrg(store, 'acme', '5', 'standard');
          await createUser(store, { email: 'ops@example.com', password: PASSWORD, operator: true });
          return await Promise.all([1, 2, 3].map(async () => (await createKey(store, 'acme')).key));
        } finally {
          await store.close();
        }
      })();
      const urls = fleet.urls();
      // Every instance now holds each key in its cache (for 60 s).
      for (const key of [byCli!, byApi!, control!]) expect(await stepStatuses(urls, key)).toEqual(new Array(9).fill(200));

      // The control: revoked in the database with no announcement, it stays accepted from the caches.
      await pgQuery(schema.url, 'UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2', [Date.now(), control!.slice(0, 11)]);
      expect(await stepStatuses(urls, control!)).toEqual(new Array(9).fill(200));

      // The CLI (a process of its own) announces it; once it has exited, the push reaches every instance.
      const revoked = await cli(['keys', 'revoke', byCli!.slice(0, 11), ...cfg]);
      expect(revoked.stdout).toBe(`revoked key ${byCli!.slice(0, 11)}… (every running instance told)\n`);
      expect(await settledStatuses(urls, byCli!, 401)).toEqual(new Array(9).fill(401));
      const refused = await roundRobin(urls, 9, 3, (url) => chat(url, byCli!));
      expect(refused.map((r) => [r.status, (r.body.error as Obj).code])).toEqual(new Array(9).fill([401, 'invalid_api_key']));

      // The management API on one instance: once it has answered, the push reaches every instance (well within the TTL).
      const signedIn = await new Api(urls[0]!).post('/api/v1/session', { email: 'ops@example.com', password: PASSWORD });
      expect(signedIn.status).toBe(200);
      const api = new Api(urls[0]!, { cookie: sessionCookieOf(signedIn), origin: urls[0]! });
      const org = ((await api.get('/api/v1/orgs')).body.data as Obj[]).find((o) => o.name === 'acme')!;
      const keys = (await api.get(`/api/v1/orgs/${String(org.id)}/keys`)).body.data as Obj[];
      const target = keys.find((k) => k.prefix === byApi!.slice(0, 11))!;
      expect((await api.delete(`/api/v1/orgs/${String(org.id)}/keys/${String(target.id)}`)).status).toBe(200);
      expect(await settledStatuses(urls, byApi!, 401)).toEqual(new Array(9).fill(401));

      // Only what was announced was evicted: the control key is still served from the caches.
      expect(await stepStatuses(urls, control!)).toEqual(new Array(9).fill(200));
    }, 60_000);

    it("every instance uses an org's own provider key as soon as the CLI has set it", async () => {
      const urls = fleet.urls();
      const store = openStore(schema.url);
      const live = await createOrg(store, 'byok', '5', 'standard').then(() => createKey(store, 'byok')).finally(() => store.close());
      const byokOf = async (replies: Array<{ requestId: string | null }>): Promise<boolean[]> => {
        const ids = replies.map((r) => r.requestId!);
        for (let i = 0; i < 100; i++) { // bounded wait for the request log's batch
          const rows = await pgQuery<{ request_id: string; byok: boolean }>(schema.url, 'SELECT request_id, byok FROM request_logs WHERE request_id = ANY($1)', [ids]);
          if (rows.length === ids.length) return ids.map((id) => rows.find((r) => r.request_id === id)!.byok);
          await sleep(100);
        }
        throw new Error('the request log rows did not arrive');
      };
      // Every instance has cached "no own keys" for the org (60 s): its requests are debited.
      const before = await roundRobin(urls, 3, 3, (url) => chat(url, live.key));
      expect(before.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(await byokOf(before)).toEqual([false, false, false]);
      const set = await cli(['provider-keys', 'set', '--org', 'byok', '--provider', 'openai', '--key', 'sk-own-key-1', '--config', fleet.config], { env });
      expect(set.stdout).toBe(`set "byok"'s own key for provider openai (stored encrypted); every running instance told\n`);
      const after = await roundRobin(urls, 3, 3, (url) => chat(url, live.key));
      expect(after.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(await byokOf(after)).toEqual([true, true, true]);
    }, 60_000);
  });
}
