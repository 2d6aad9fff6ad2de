import { beforeAll, describe, expect, it } from 'vitest';
import { chat } from './cli-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow } from './harness.js';
import { addUser, Api, type Api as ApiT, code, type Obj, PASSWORD, signIn, tokenApi } from './management-helpers.js';

/*
 * The account lifecycle through /api/v1 on one gateway (issue 32): password change,
 * deactivation, key rotation. The same across instances: test/fleet-lifecycle.test.ts.
 */
const t = useOrgGateway('acme', '10', undefined, { ledger: true });
const NEW_PASSWORD = 'a different horse, battery and staple';
let op: ApiT;
let owner: ApiT;
const org = (): string => `/api/v1/orgs/${t.orgId}`;

beforeAll(async () => {
  await addUser(t, 'op@tollgate.test', { operator: true });
  await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  op = await signIn(t.url, 'op@tollgate.test');
  owner = await signIn(t.url, 'owner@acme.test');
});

const defaultProject = async (): Promise<string> => ((await owner.get(`${org()}/projects`)).body.data as Obj[])[0]!.id as string;
const me = async (api: ApiT): Promise<number> => (await api.get('/api/v1/me')).status;

describe('password change', () => {
  it('keeps the session that changed it, ends every other one, and the new password signs in', async () => {
    await addUser(t, 'pat@acme.test', { org: 'acme', role: 'member' });
    const here = await signIn(t.url, 'pat@acme.test');
    const elsewhere = await signIn(t.url, 'pat@acme.test');
    const token = (await here.post('/api/v1/tokens', { name: 'ci' })).body.token as string;

    const r = await here.put('/api/v1/me/password', { current_password: PASSWORD, new_password: NEW_PASSWORD });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ password_changed: true });
    expect(await me(here)).toBe(200);
    const ended = await elsewhere.get('/api/v1/me');
    expect([ended.status, code(ended)]).toEqual([401, 'authentication_required']);
    expect(await me(tokenApi(t.url, token))).toBe(200); // tokens are not sessions: they stay

    const old = await new Api(t.url).post('/api/v1/session', { email: 'pat@acme.test', password: PASSWORD });
    expect([old.status, code(old)]).toEqual([401, 'invalid_credentials']);
    await signIn(t.url, 'pat@acme.test', NEW_PASSWORD);
  });

  it('refuses a wrong current password (counted by the sign-in throttle) and a new one too short', async () => {
    await addUser(t, 'wrong@acme.test', { org: 'acme', role: 'member' });
    const api = await signIn(t.url, 'wrong@acme.test');
    const short = await api.put('/api/v1/me/password', { current_password: PASSWORD, new_password: 'short' });
    expect([short.status, code(short), (short.body.error as Obj).param]).toEqual([400, 'invalid_request', 'new_password']);
    const statuses: Array<[number, string | undefined]> = [];
    for (let i = 0; i < 6; i++) {
      const r = await api.put('/api/v1/me/password', { current_password: `not the password ${i}`, new_password: NEW_PASSWORD });
      statuses.push([r.status, code(r)]);
    }
    // Five failures per account a minute (src/management/throttle.ts): the sixth is throttled.
    expect(statuses).toEqual([...new Array(5).fill([403, 'wrong_password']), [429, 'login_throttled']]);
    const signInNow = await new Api(t.url).post('/api/v1/session', { email: 'wrong@acme.test', password: PASSWORD });
    expect([signInNow.status, code(signInNow)]).toEqual([429, 'login_throttled']);
    expect(await me(api)).toBe(200); // still signed in, password unchanged
  });
});

describe('deactivation', () => {
  it('stops the user\'s session and tokens at once, refuses their sign-in, and reactivation restores it', async () => {
    const id = await addUser(t, 'dee@acme.test', { org: 'acme', role: 'admin' });
    const session = await signIn(t.url, 'dee@acme.test');
    const token = tokenApi(t.url, (await session.post('/api/v1/tokens', { name: 'ci' })).body.token as string);
    expect([await me(session), await me(token)]).toEqual([200, 200]);

    const off = await op.patch('/api/v1/users/dee@acme.test', { active: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body).toMatchObject({ id, email: 'dee@acme.test', active: false });
    const [s, k] = [await session.get('/api/v1/me'), await token.get('/api/v1/me')];
    expect([[s.status, code(s)], [k.status, code(k)]]).toEqual([[401, 'authentication_required'], [401, 'account_deactivated']]);
    const refused = await new Api(t.url).post('/api/v1/session', { email: 'dee@acme.test', password: PASSWORD });
    expect([refused.status, code(refused)]).toEqual([401, 'account_deactivated']);
    const wrong = await new Api(t.url).post('/api/v1/session', { email: 'dee@acme.test', password: 'not the password' });
    expect(code(wrong)).toBe('invalid_credentials'); // told only to someone who knows the password

    const on = await op.patch(`/api/v1/users/${id}`, { active: true });
    expect([on.status, on.body.active]).toEqual([200, true]);
    expect(await me(await signIn(t.url, 'dee@acme.test'))).toBe(200);
    expect(await me(token)).toBe(200);
    expect(await me(session)).toBe(401); // the ended session stays ended
  });

  it('is for operators only, not for oneself, and keeps every org with an active owner', async () => {
    const denied = await owner.patch('/api/v1/users/op@tollgate.test', { active: false });
    expect([denied.status, code(denied)]).toEqual([403, 'permission_denied']);
    const self = await op.patch('/api/v1/users/op@tollgate.test', { active: false });
    expect([self.status, code(self)]).toEqual([400, 'invalid_request']);
    const missing = await op.patch('/api/v1/users/nobody@acme.test', { active: false });
    expect(missing.status).toBe(404);

    const last = await op.patch('/api/v1/users/owner@acme.test', { active: false });
    expect([last.status, code(last)]).toEqual([409, 'last_owner']);
    expect(await me(owner)).toBe(200);
    await addUser(t, 'owner2@acme.test', { org: 'acme', role: 'owner' });
    expect((await op.patch('/api/v1/users/owner2@acme.test', { active: false })).status).toBe(200);
    // owner2 is deactivated, so owner is still the only *active* owner.
    expect(code(await op.patch('/api/v1/users/owner@acme.test', { active: false }))).toBe('last_owner');
    expect((await op.patch('/api/v1/users/owner2@acme.test', { active: true })).status).toBe(200);
  });
});

describe('key rotation', () => {
  it('gives a new secret to the same key: the old one works through the grace, then is refused; usage stays on the key', async () => {
    const created = (await owner.post(`${org()}/projects/${await defaultProject()}/keys`, { name: 'rotated', limits: { rpm: 1000 } })).body;
    expect(created.key, JSON.stringify(created)).toBeDefined();
    const oldKey = created.key as string;
    const before = await chat(t.url, oldKey);
    expect(before.status).toBe(200);

    const r = await owner.post(`${org()}/keys/${created.id as string}/rotate`, { grace_seconds: 2 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const newKey = r.body.key as string;
    expect(newKey).toMatch(/^tg_[A-Za-z0-9]{40}$/);
    expect(newKey).not.toBe(oldKey);
    expect(r.body).toMatchObject({ id: created.id, prefix: created.prefix, name: 'rotated', status: 'active', limits: { rpm: 1000 } });
    const graceEnds = Date.parse(r.body.previous_expires_at as string);
    expect(graceEnds).toBeGreaterThan(Date.now());

    const duringOld = await chat(t.url, oldKey);
    const duringNew = await chat(t.url, newKey);
    expect([duringOld.status, duringNew.status]).toEqual([200, 200]);
    // Bounded wait: the grace is 2 s.
    await new Promise((res) => setTimeout(res, Math.max(0, graceEnds - Date.now()) + 50));
    const after = await chat(t.url, oldKey);
    expect([after.status, (after.body.error as Obj).code]).toEqual([401, 'invalid_api_key']);
    const afterNew = await chat(t.url, newKey);
    expect(afterNew.status).toBe(200);

    for (const id of [before.requestId, duringOld.requestId, duringNew.requestId, afterNew.requestId]) {
      expect((await logRow(t, id!)).apiKeyId).toBe(created.id);
    }
    const key = (await owner.get(`${org()}/keys/${created.id as string}`)).body;
    expect(key).toMatchObject({ id: created.id, prefix: created.prefix, status: 'active' });
    expect(JSON.stringify(key)).not.toContain(newKey.slice(11));
  });

  it('with no grace refuses the old secret at once; a revoked key, another org\'s key and a grace past 7 days are refused', async () => {
    const created = (await owner.post(`${org()}/projects/${await defaultProject()}/keys`, {})).body;
    const r = await owner.post(`${org()}/keys/${created.id as string}/rotate`, { grace_seconds: 0 });
    expect(r.status).toBe(200);
    expect((await chat(t.url, created.key as string)).status).toBe(401);
    expect((await chat(t.url, r.body.key as string)).status).toBe(200);

    const tooLong = await owner.post(`${org()}/keys/${created.id as string}/rotate`, { grace_seconds: 7 * 24 * 3600 + 1 });
    expect([tooLong.status, code(tooLong)]).toEqual([400, 'invalid_request']);
    expect((await owner.delete(`${org()}/keys/${created.id as string}`)).status).toBe(200);
    const revoked = await owner.post(`${org()}/keys/${created.id as string}/rotate`, { grace_seconds: 60 });
    expect([revoked.status, code(revoked)]).toEqual([404, 'not_found']);
    const other = (await op.post('/api/v1/orgs', { name: 'other' })).body;
    const foreign = await op.post(`/api/v1/orgs/${other.id as string}/keys/${created.id as string}/rotate`, { grace_seconds: 60 });
    expect(foreign.status).toBe(404);
  });
});
