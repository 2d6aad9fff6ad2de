import { beforeAll, describe, expect, it } from 'vitest';
import { createOrg } from '../src/tenancy/admin.js';
import { useOrgGateway } from './fixtures.js';
import { addUser, code, rows, signIn, type Api } from './management-helpers.js';

/*
 * Issue 27, finding 8: an owner's "add member" must neither tell whether an email has an
 * account on this instance nor make anyone a member without their consent. It sends an
 * invitation; the invitee joins by accepting it while signed in.
 */
let clock = Date.UTC(2026, 10, 5, 12);
const t = useOrgGateway('acme', '1', { now: () => clock });
const org = (): string => `/api/v1/orgs/${t.orgId}`;
let owner: Api;
let op: Api;

beforeAll(async () => {
  await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  await addUser(t, 'op@tollgate.test', { operator: true });
  // The owner of another org: adding them must not make them a member of acme.
  await createOrg(t.gateway.store, 'rival', '0', 'standard');
  await addUser(t, 'boss@rival.test', { org: 'rival', role: 'owner' });
  await addUser(t, 'bystander@acme.test');
  owner = await signIn(t.url, 'owner@acme.test');
  op = await signIn(t.url, 'op@tollgate.test');
});

const shape = (body: Record<string, unknown>): unknown => {
  const inv = body.invitation as Record<string, unknown>;
  return { member: body.member, keys: Object.keys(inv).sort(), status: inv.status, role: inv.role, ttl: Date.parse(inv.expires_at as string) - Date.parse(inv.created_at as string) };
};

describe('an owner adds a member by invitation', () => {
  it('answers the same for an email with an account and one without: 202 with the invitation, nothing about the user', async () => {
    const known = await owner.post(`${org()}/members`, { email: 'boss@rival.test', role: 'admin' });
    const unknown = await owner.post(`${org()}/members`, { email: 'nobody@nowhere.test', role: 'admin' });
    expect([known.status, unknown.status]).toEqual([202, 202]);
    expect(shape(known.body)).toEqual(shape(unknown.body));
    expect(shape(known.body)).toMatchObject({ member: null, status: 'pending', role: 'admin', ttl: 7 * 24 * 3600 * 1000 });
    expect(JSON.stringify(known.body)).not.toContain('usr_');
    // Nobody joined: the members are as before.
    expect(rows(await owner.get(`${org()}/members`)).map((m) => m.email)).toEqual(['owner@acme.test']);
    expect(rows(await owner.get(`${org()}/invitations`)).map((i) => i.email).sort()).toEqual(['boss@rival.test', 'nobody@nowhere.test']);
  });

  it('refuses a password from an owner (only operators create users), so an owner cannot probe with it either', async () => {
    const r = await owner.post(`${org()}/members`, { email: 'someone@acme.test', role: 'member', password: 'a long enough password' });
    expect([r.status, code(r), (r.body.error as { param?: string }).param]).toEqual([400, 'invalid_request', 'password']);
  });

  it('the invitee is not a member until they accept; then they are, with the invited role', async () => {
    const sent = await owner.post(`${org()}/members`, { email: 'Bystander@acme.test', role: 'member' });
    const id = (sent.body.invitation as { id: string }).id;
    const invitee = await signIn(t.url, 'bystander@acme.test');
    expect((await invitee.get(`${org()}/projects`)).status).toBe(404); // not a member yet
    const mine = rows(await invitee.get('/api/v1/invitations'));
    expect(mine).toEqual([expect.objectContaining({ id, org_id: t.orgId, org_name: 'acme', role: 'member', status: 'pending' })]);

    const accepted = await invitee.post(`/api/v1/invitations/${id}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ invitation: { id, status: 'accepted' }, member: { email: 'bystander@acme.test', role: 'member' } });
    expect((await invitee.get(`${org()}/projects`)).status).toBe(200);
    expect(rows(await invitee.get('/api/v1/invitations'))).toEqual([]);
    // Accepted once: not again.
    expect((await invitee.post(`/api/v1/invitations/${id}/accept`)).status).toBe(404);
  });

  it('nobody can accept (or decline) an invitation addressed to someone else', async () => {
    const sent = await owner.post(`${org()}/members`, { email: 'boss@rival.test', role: 'owner' });
    const id = (sent.body.invitation as { id: string }).id;
    const intruder = await signIn(t.url, 'bystander@acme.test'); // a member of acme now, not the invitee
    const stolen = await intruder.post(`/api/v1/invitations/${id}/accept`);
    expect([stolen.status, code(stolen)]).toEqual([404, 'not_found']);
    expect((await intruder.post(`/api/v1/invitations/${id}/decline`)).status).toBe(404);
    expect(rows(await owner.get(`${org()}/members`)).find((m) => m.email === 'boss@rival.test')).toBeUndefined();
    // The invitee still can, and declining leaves them out.
    const boss = await signIn(t.url, 'boss@rival.test');
    expect(rows(await boss.get('/api/v1/invitations')).map((i) => i.id)).toContain(id);
    expect((await boss.post(`/api/v1/invitations/${id}/decline`)).body).toMatchObject({ id, status: 'declined' });
    expect((await boss.post(`/api/v1/invitations/${id}/accept`)).status).toBe(404);
    expect((await boss.get(`${org()}/projects`)).status).toBe(404);
  });

  it('an invitation expires after 7 days, and an owner can revoke one before it is accepted', async () => {
    const a = (await owner.post(`${org()}/members`, { email: 'late@acme.test', role: 'member' })).body.invitation as { id: string };
    const b = (await owner.post(`${org()}/members`, { email: 'late@acme.test', role: 'admin' })).body.invitation as { id: string };
    expect((await owner.delete(`${org()}/invitations/${b.id}`)).body).toMatchObject({ id: b.id, status: 'revoked' });
    await addUser(t, 'late@acme.test');
    const late = await signIn(t.url, 'late@acme.test');
    expect(rows(await late.get('/api/v1/invitations')).map((i) => i.id)).toEqual([a.id]);
    clock += 7 * 24 * 3600 * 1000;
    const later = await signIn(t.url, 'late@acme.test'); // sessions last 12 hours
    expect(rows(await later.get('/api/v1/invitations'))).toEqual([]);
    expect((await later.post(`/api/v1/invitations/${a.id}/accept`)).status).toBe(404);
    owner = await signIn(t.url, 'owner@acme.test');
    op = await signIn(t.url, 'op@tollgate.test');
  });
});

describe('an operator adds directly', () => {
  it('adds an existing user at once (201), creates one with a password, and invites an unknown email without one', async () => {
    await addUser(t, 'direct@acme.test');
    const added = await op.post(`${org()}/members`, { email: 'direct@acme.test', role: 'member' });
    expect([added.status, added.body.invitation]).toEqual([201, null]);
    expect(added.body.member).toMatchObject({ email: 'direct@acme.test', role: 'member' });
    expect((await op.post(`${org()}/members`, { email: 'direct@acme.test', role: 'admin' })).status).toBe(409);
    const created = await op.post(`${org()}/members`, { email: 'Fresh@acme.test', role: 'admin', password: 'a long enough password' });
    expect(created.status).toBe(201);
    expect(created.body.member).toMatchObject({ email: 'fresh@acme.test', role: 'admin' });
    expect((await signIn(t.url, 'fresh@acme.test', 'a long enough password').then((a) => a.get(`${org()}/projects`))).status).toBe(200);
    const invited = await op.post(`${org()}/members`, { email: 'unknown@acme.test', role: 'member' });
    expect([invited.status, invited.body.member]).toEqual([202, null]);
  });
});
