import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { chat, query } from './cli-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';
import { addUser, type Api, code, type Obj, rows, signIn } from './management-helpers.js';

/** Projects, API keys (expiry, allow-list, revocation), members, credits and provider keys through /api/v1. */
let clock = Date.UTC(2026, 10, 3, 12);
const t = useOrgGateway('acme', '10', { now: () => clock }, { ledger: true });
let owner: Api;
let op: Api;
const org = (): string => `/api/v1/orgs/${t.orgId}`;
/** Calls the simulator (the upstream) has received, all routes together. */
const simCalls = (): number => Object.values(t.sim.calls()).reduce((a, b) => a + b, 0);

beforeAll(async () => {
  await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  await addUser(t, 'op@tollgate.test', { operator: true });
  owner = await signIn(t.url, 'owner@acme.test');
  op = await signIn(t.url, 'op@tollgate.test');
});

async function newKey(project: string, body: Obj = {}): Promise<Obj> {
  const r = await owner.post(`${org()}/projects/${project}/keys`, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

describe('projects and keys', () => {
  let web: Obj;
  beforeAll(async () => {
    web = (await owner.post(`${org()}/projects`, { name: 'web' })).body;
  });

  it('creates projects with unique names and lists them with their live keys', async () => {
    expect(web).toMatchObject({ id: expect.stringMatching(/^prj_/), name: 'web', live_keys: 0 });
    const dup = await owner.post(`${org()}/projects`, { name: 'web' });
    expect(dup.status).toBe(409);
    expect(code(dup)).toBe('already_exists');
    await newKey(web.id as string, { name: 'one' });
    const list = rows(await owner.get(`${org()}/projects`));
    expect(list.map((p) => [p.name, p.live_keys])).toEqual([['default', 1], ['web', 1]]);
  });

  it('shows a new key once; lists carry its prefix, name and project, never the key or its hash', async () => {
    const created = await newKey(web.id as string, { name: 'backend' });
    const key = created.key as string;
    expect(created).toMatchObject({ prefix: key.slice(0, 11), name: 'backend', project_id: web.id, project_name: 'web', status: 'active', expires_at: null, allowed_models: null, last_used_at: null });
    const [all, inProject] = await Promise.all([owner.get(`${org()}/keys`), owner.get(`${org()}/projects/${web.id as string}/keys`)]);
    for (const list of [all, inProject]) {
      expect(rows(list).map((k) => k.id)).toContain(created.id);
      expect(JSON.stringify(list.body)).not.toContain(key);
      expect(JSON.stringify(list.body)).not.toMatch(/"hash"|[0-9a-f]{64}/);
    }
    expect(rows(inProject).every((k) => k.project_id === web.id)).toBe(true);
  });

  it('files the requests of a key under its project and records when it was last used', async () => {
    const created = await newKey(web.id as string, { name: 'logged' });
    const r = await chat(t.url, created.key as string);
    expect(r.status).toBe(200);
    expect(await logRow(t, r.requestId ?? '')).toMatchObject({ projectId: web.id, apiKeyId: created.id });
    const listed = rows(await owner.get(`${org()}/projects/${web.id as string}/keys`)).find((k) => k.id === created.id);
    expect(listed?.last_used_at).toBe(new Date(clock).toISOString());
  });

  it('revokes a key: refused everywhere within a second, shown as revoked', async () => {
    const created = await newKey(web.id as string);
    expect((await chat(t.url, created.key as string)).status).toBe(200);
    const revoked = await owner.delete(`${org()}/keys/${created.id as string}`);
    expect(revoked.body).toMatchObject({ id: created.id, status: 'revoked', revoked_at: new Date(clock).toISOString() });
    clock += 1001;
    const r = await chat(t.url, created.key as string);
    expect(r.status).toBe(401);
    expect((r.body.error as Obj).code).toBe('invalid_api_key');
    expect((await owner.delete(`${org()}/keys/key_doesnotexist`)).status).toBe(404);
  });

  it('refuses an expired key with 401 api_key_expired, logged and not charged', async () => {
    const created = await newKey(web.id as string, { expires_at: new Date(clock + 60_000).toISOString() });
    expect((await chat(t.url, created.key as string)).status).toBe(200);
    const balance = await t.balance(t.orgId);
    clock += 60_000;
    const r = await chat(t.url, created.key as string);
    expect(r.status).toBe(401);
    expect(r.body.error).toMatchObject({ code: 'api_key_expired', type: 'authentication_error' });
    expect((r.body.error as { message: string }).message).toContain(created.prefix as string);
    expect(await logRow(t, r.requestId ?? '')).toMatchObject({ status: 401, errorCode: 'api_key_expired', costMicros: 0 });
    expect(await t.balance(t.orgId)).toBe(balance);
    const listed = rows(await owner.get(`${org()}/keys`)).find((k) => k.id === created.id);
    expect(listed?.status).toBe('expired');
  });

  it('refuses a model outside the allow-list before any upstream call (403), charges nothing, logs it', async () => {
    const created = await newKey(web.id as string, { allowed_models: ['gpt-4o-mini', 'text-embedding-3-small'] });
    const key = created.key as string;
    expect(created.allowed_models).toEqual(['gpt-4o-mini', 'text-embedding-3-small']);
    const upstreamBefore = simCalls();
    expect((await chat(t.url, key)).status).toBe(200);
    expect(simCalls()).toBe(upstreamBefore + 1);
    expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'pinned' }] }, key)).status).toBe(200);
    const [balance, calls] = [await t.balance(t.orgId), simCalls()];
    const refused = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, key);
    expect(refused.status).toBe(403);
    expect((refused.body as { error: Obj }).error).toMatchObject({ code: 'model_not_allowed', type: 'permission_error', param: 'model' });
    expect(simCalls()).toBe(calls);
    expect(await t.balance(t.orgId)).toBe(balance);
    expect(await logRow(t, refused.headers.get('x-request-id') ?? '')).toMatchObject({ status: 403, errorCode: 'model_not_allowed', costMicros: 0, requestedModel: 'gpt-4o', projectId: web.id });
  });

  it('refuses bad key settings with a 400 naming the field, and creates nothing', async () => {
    const before = rows(await owner.get(`${org()}/keys`)).length;
    for (const [body, param] of [
      [{ allowed_models: ['gpt-4o-mini', 'no-such-model'] }, 'allowed_models[1]'],
      [{ allowed_models: [] }, 'allowed_models'],
      [{ expires_at: new Date(clock - 1000).toISOString() }, 'expires_at'],
      [{ expires_at: 'next tuesday' }, 'expires_at'],
    ] as const) {
      const r = await owner.post(`${org()}/projects/${web.id as string}/keys`, body);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect((r.body.error as Obj).param).toBe(param);
    }
    expect(rows(await owner.get(`${org()}/keys`))).toHaveLength(before);
    expect((await owner.post(`${org()}/projects/prj_nope/keys`, {})).status).toBe(404);
  });
});

describe('members', () => {
  // An owner's add is an invitation (test/invitations.test.ts); an operator adds directly, as here.
  it('an operator adds users by email (creating one with a password); roles change; the last owner stays', async () => {
    const ownerId = (await owner.get('/api/v1/me')).body.id as string;
    await addUser(t, 'existing@acme.test');
    const added = await op.post(`${org()}/members`, { email: 'existing@acme.test', role: 'member' });
    expect(added.status).toBe(201);
    expect(added.body.member).toMatchObject({ email: 'existing@acme.test', role: 'member' });
    expect((await op.post(`${org()}/members`, { email: 'existing@acme.test', role: 'admin' })).status).toBe(409);
    expect((await op.post(`${org()}/members`, { email: 'new@acme.test', role: 'admin', password: 'short' })).status).toBe(400);
    const created = await op.post(`${org()}/members`, { email: 'New@acme.test', role: 'admin', password: 'a long enough password' });
    expect(created.body.member).toMatchObject({ email: 'new@acme.test', role: 'admin' });
    const newcomer = await signIn(t.url, 'new@acme.test', 'a long enough password');
    expect((await newcomer.get(`${org()}/projects`)).status).toBe(200);

    expect(code(await owner.delete(`${org()}/members/${ownerId}`))).toBe('last_owner');
    expect(code(await owner.patch(`${org()}/members/${ownerId}`, { role: 'admin' }))).toBe('last_owner');
    const promoted = await owner.patch(`${org()}/members/${(added.body.member as Obj).user_id as string}`, { role: 'owner' });
    expect(promoted.body).toMatchObject({ role: 'owner' });
    expect(rows(await owner.get(`${org()}/members`)).map((m) => [m.email, m.role])).toEqual([
      ['existing@acme.test', 'owner'], ['new@acme.test', 'admin'], ['owner@acme.test', 'owner'],
    ]);
    const createdId = (created.body.member as Obj).user_id as string;
    expect((await owner.delete(`${org()}/members/${createdId}`)).body).toEqual({ user_id: createdId, removed: true });
    expect((await newcomer.get(`${org()}/projects`)).status).toBe(404); // no longer a member: the org is not theirs
  });
});

describe('credits', () => {
  it('lists the balance and top-ups with who made them; operators add and remove, never below zero', async () => {
    const before = await t.balance(t.orgId);
    const added = await op.post(`${org()}/credits`, { amount_usd: '2.5', note: 'invoice 42' });
    expect(added.status).toBe(201);
    expect(added.body.balance_usd).toBe((before + 2_500_000) / 1e6);
    const history = await owner.get(`${org()}/credits?limit=1`);
    expect(rows(history)).toEqual([{ id: expect.any(Number), amount_usd: 2.5, note: 'invoice 42', created_at: new Date(clock).toISOString(), created_by: { id: expect.stringMatching(/^usr_/), email: 'op@tollgate.test' } }]);
    const older = await owner.get(`${org()}/credits?limit=1&cursor=${history.body.next_cursor as string}`);
    expect(rows(older)[0]).toMatchObject({ amount_usd: 10, note: 'initial credits', created_by: null });
    for (const amount of [-1_000_000, 0, 1.0000001]) {
      const r = await op.post(`${org()}/credits`, { amount_usd: amount });
      expect([r.status, (r.body.error as Obj).param]).toEqual([400, 'amount_usd']);
    }
    expect(await t.balance(t.orgId)).toBe(before + 2_500_000);
  });
});

describe('provider keys (bring your own key)', () => {
  it('are listed masked, stored encrypted (the raw table holds no key), and used for the org\'s requests', async () => {
    const secret = 'org-own-key-Vf3kP9sQ2mZx7LwB';
    const put = await owner.put(`${org()}/provider-keys/openai`, { key: secret });
    expect(put.body).toMatchObject({ provider: 'openai', masked: 'org…7LwB' });
    const list = await owner.get(`${org()}/provider-keys`);
    expect(rows(list)).toEqual([{ provider: 'openai', masked: 'org…7LwB', updated_at: expect.any(String), updated_by: expect.stringMatching(/^usr_/) }]);
    expect(list.body.providers).toEqual(expect.arrayContaining(['openai', 'anthropic']));
    expect(JSON.stringify(list.body)).not.toContain(secret);
    const raw = query<Obj>(join(t.dir, 'gateway.db'), 'SELECT * FROM provider_keys');
    expect(raw).toHaveLength(1);
    expect(JSON.stringify(raw)).not.toContain(secret);
    expect(JSON.stringify(raw)).not.toContain(secret.slice(4, 20));

    clock += 1001; // provider keys are cached for a second
    const balance = await t.balance(t.orgId);
    const r = await chat(t.url, t.key);
    expect(r.status).toBe(200);
    expect((await logRow(t, r.requestId ?? '')).byok).toBe(true);
    expect(await t.balance(t.orgId)).toBe(balance);

    expect((await owner.put(`${org()}/provider-keys/not-a-provider`, { key: 'x' })).body.error).toMatchObject({ param: 'provider' });
    expect((await owner.delete(`${org()}/provider-keys/openai`)).body).toEqual({ provider: 'openai', deleted: true });
    expect((await owner.delete(`${org()}/provider-keys/openai`)).status).toBe(404);
    clock += 1001;
    await expectLedgerMatchesLog(t, t.orgId);
  });
});
