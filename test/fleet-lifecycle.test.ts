import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, createUser } from '../src/tenancy/admin.js';
import { openStore } from '../src/store/index.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { chat, cli, killAll, lastLine } from './cli-helpers.js';
import { sharedPostgresSchema, startFleet, type Fleet } from './fleet.js';
import { expectLedgersExactAt, tempDir } from './harness.js';
import { Api, code, PASSWORD, signIn, tokenApi } from './management-helpers.js';

/*
 * The account lifecycle across two gateway processes on one PostgreSQL schema (pushes
 * over LISTEN/NOTIFY), each caching API keys for 60 s: a deactivation on one instance
 * stops the user on the other at once; a key rotated by the CLI is served with its new
 * secret by both at once, and its old secret is refused by both after the grace.
 */
describe('account lifecycle on two instances', () => {
  let sim: Simulator;
  let fleet: Fleet;
  const schema = sharedPostgresSchema('lifecycle');
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    fleet = await startFleet({ n: 2, dir: tempDir(), simUrl: sim.url, databaseUrl: schema.url, yaml: { cache: { ttl_ms: 60_000 } } });
  }, 120_000);
  afterAll(async () => {
    try {
      await fleet?.stop();
      await killAll();
      if (fleet) await expectLedgersExactAt(schema.url);
    } finally {
      await schema.drop();
      await sim?.close();
    }
  }, 30_000);

  it('deactivation stops a session and a tgm_ token on the other instance at once and refuses sign-in; reactivation restores it', async () => {
    const store = openStore(schema.url);
    try {
      await createOrg(store, 'acme', '5', 'standard');
      await createUser(store, { email: 'ops@example.com', password: PASSWORD, operator: true });
      await createUser(store, { email: 'dev@example.com', password: PASSWORD, org: 'acme', role: 'admin' });
    } finally {
      await store.close();
    }
    const [a, b] = fleet.urls() as [string, string];
    const op = await signIn(a, 'ops@example.com');
    const dev = await signIn(b, 'dev@example.com');
    const token = tokenApi(b, (await dev.post('/api/v1/tokens', { name: 'ci' })).body.token as string);
    expect([(await dev.get('/api/v1/me')).status, (await token.get('/api/v1/me')).status]).toEqual([200, 200]);

    expect((await op.patch('/api/v1/users/dev@example.com', { active: false })).status).toBe(200);
    const [s, k] = [await dev.get('/api/v1/me'), await token.get('/api/v1/me')];
    expect([[s.status, code(s)], [k.status, code(k)]]).toEqual([[401, 'authentication_required'], [401, 'account_deactivated']]);
    const refused = await new Api(b).post('/api/v1/session', { email: 'dev@example.com', password: PASSWORD });
    expect([refused.status, code(refused)]).toEqual([401, 'account_deactivated']);

    const on = await cli(['users', 'activate', 'dev@example.com', '--config', fleet.config]);
    expect(on.stdout).toBe('activated dev@example.com\n');
    expect((await (await signIn(b, 'dev@example.com')).get('/api/v1/me')).status).toBe(200);
    expect((await token.get('/api/v1/me')).status).toBe(200);
    const off = await cli(['users', 'deactivate', 'dev@example.com', '--config', fleet.config]);
    expect(off.stdout).toBe('deactivated dev@example.com\n');
    expect(code(await tokenApi(a, token.headers.authorization!.slice(7)).get('/api/v1/me'))).toBe('account_deactivated');
  });

  it('a key rotated by the CLI: both instances take the new secret at once and refuse the old one after the grace', async () => {
    const store = openStore(schema.url);
    const oldKey = await (async () => {
      try {
        return (await createKey(store, 'acme')).key;
      } finally {
        await store.close();
      }
    })();
    const urls = fleet.urls();
    for (const url of urls) expect((await chat(url, oldKey)).status).toBe(200); // cached by both, for 60 s
    const r = await cli(['keys', 'rotate', oldKey.slice(0, 11), '--grace', '2', '--config', fleet.config]);
    expect(r.stdout).toContain('(every running instance told)');
    const newKey = lastLine(r.stdout);
    const until = Date.parse(/works until (\S+?)[ ;]/.exec(r.stdout)![1]!);
    for (const url of urls) expect([(await chat(url, newKey)).status, (await chat(url, oldKey)).status]).toEqual([200, 200]);
    await new Promise((res) => setTimeout(res, Math.max(0, until - Date.now()) + 50)); // bounded: 2 s
    for (const url of urls) {
      const old = await chat(url, oldKey);
      expect([old.status, (old.body.error as { code?: string }).code]).toEqual([401, 'invalid_api_key']);
      expect((await chat(url, newKey)).status).toBe(200);
    }
  });
});
