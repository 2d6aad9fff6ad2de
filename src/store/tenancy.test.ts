import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { drivers, useStorePair } from './drivers.testkit.js';
import type { NewApiKey } from './tenancy.js';
import { DuplicateError, type Org, type Store } from './types.js';

describe.each(drivers)('$name tenancy and accounts', ({ setup }) => {
  const T0 = 1_700_000_000_000;
  const clock = { ms: T0 };
  const pair = useStorePair(setup, 'tenancy', () => clock.ms);
  let store: Store;
  /** A second instance on the same database, as a second gateway process (or the CLI) opens it. */
  let other: Store;
  beforeAll(() => {
    ({ store, other } = pair);
  });

  const newOrg = (credits = 0): Promise<Org> => store.createOrg(`org ${newId('t')}`, credits, 'standard');
  const keyOf = (org: Org, projectId: string, over: Partial<NewApiKey> = {}): NewApiKey => ({
    orgId: org.id, projectId, prefix: `tg_${newId('k').slice(2, 10)}`, hash: 'c'.repeat(64), name: 'ci', expiresAt: null,
    allowedModels: null, createdBy: null, ...over,
  });
  const defaultProject = async (org: Org): Promise<string> => (await store.tenancy.findProject(org.id, 'default'))!.id;

  it('gives every new org a default project, and keeps project names unique per org', async () => {
    const a = await newOrg();
    const b = await newOrg();
    expect(await store.tenancy.listProjects(a.id)).toEqual([{ id: expect.stringMatching(/^prj_/), orgId: a.id, name: 'default', createdAt: T0, liveKeys: 0, limits: {}, defaultMaxTokens: null, unsupportedParams: null,
      cache: null, guardrails: [], bodyLogging: { mode: 'off', retention_days: 30, max_bytes: 65_536 } }]);
    const web = await store.tenancy.createProject(a.id, 'web');
    await expect(other.tenancy.createProject(a.id, 'web')).rejects.toBeInstanceOf(DuplicateError);
    expect((await store.tenancy.createProject(b.id, 'web')).orgId).toBe(b.id);
    expect((await other.tenancy.listProjects(a.id)).map((p) => p.name)).toEqual(['default', 'web']);
    expect(await store.tenancy.getProject(a.id, web.id)).toEqual(web);
    expect(await store.tenancy.getProject(b.id, web.id)).toBeUndefined();
  });

  it('sets and clears a project\'s default max_tokens, only in the project\'s own org', async () => {
    const org = await newOrg();
    const stranger = await newOrg();
    const project = await defaultProject(org);
    expect(await store.tenancy.setProjectDefaultMaxTokens(org.id, project, 4096)).toBe(true);
    expect((await other.tenancy.getProject(org.id, project))?.defaultMaxTokens).toBe(4096);
    expect((await other.tenancy.listProjects(org.id))[0]?.defaultMaxTokens).toBe(4096);
    expect(await store.tenancy.setProjectDefaultMaxTokens(stranger.id, project, 1)).toBe(false);
    expect((await store.tenancy.findProject(org.id, 'default'))?.defaultMaxTokens).toBe(4096);
    expect(await store.tenancy.setProjectDefaultMaxTokens(org.id, project, null)).toBe(true);
    expect((await other.tenancy.getProject(org.id, project))?.defaultMaxTokens).toBeNull();
  });

  it('sets and clears a project\'s unsupported_params, only in the project\'s own org, beside its default max_tokens', async () => {
    const org = await newOrg();
    const stranger = await newOrg();
    const project = await defaultProject(org);
    await store.tenancy.setProjectDefaultMaxTokens(org.id, project, 512);
    expect(await store.tenancy.setProjectUnsupportedParams(org.id, project, 'error')).toBe(true);
    expect(await other.tenancy.getProject(org.id, project)).toMatchObject({ unsupportedParams: 'error', defaultMaxTokens: 512 });
    expect((await other.tenancy.listProjects(org.id))[0]?.unsupportedParams).toBe('error');
    expect(await store.tenancy.setProjectUnsupportedParams(stranger.id, project, 'drop')).toBe(false);
    expect((await store.tenancy.findProject(org.id, 'default'))?.unsupportedParams).toBe('error');
    expect(await store.tenancy.setProjectUnsupportedParams(org.id, project, 'drop')).toBe(true);
    expect((await other.tenancy.getProject(org.id, project))?.unsupportedParams).toBe('drop');
    expect(await store.tenancy.setProjectUnsupportedParams(org.id, project, null)).toBe(true);
    expect(await other.tenancy.getProject(org.id, project)).toMatchObject({ unsupportedParams: null, defaultMaxTokens: 512 });
  });

  it('creates keys only in a project of the same org, and lists, finds and revokes them scoped by org', async () => {
    const org = await newOrg();
    const stranger = await newOrg();
    const project = await defaultProject(org);
    const key = await store.tenancy.createKey(keyOf(org, project, { expiresAt: T0 + 60_000, allowedModels: ['gpt-4o-mini', 'claude-3-5-haiku'], createdBy: 'usr_x' }));
    expect(key).toMatchObject({ orgId: org.id, projectId: project, name: 'ci', expiresAt: T0 + 60_000, allowedModels: ['gpt-4o-mini', 'claude-3-5-haiku'], lastUsedAt: null, createdBy: 'usr_x' });
    expect(await other.findApiKey(key!.prefix)).toEqual(key);

    const intruder = keyOf(stranger, project);
    expect(await store.tenancy.createKey(intruder)).toBeUndefined();
    expect(await store.findApiKey(intruder.prefix)).toBeUndefined();

    expect((await store.tenancy.listKeys(org.id)).map((k) => [k.id, k.projectName])).toEqual([[key!.id, 'default']]);
    expect(await store.tenancy.listKeys(stranger.id)).toEqual([]);
    expect(await store.tenancy.getKey(stranger.id, key!.id)).toBeUndefined();
    expect(await store.tenancy.revokeKey(stranger.id, key!.id)).toBeUndefined();
    expect((await store.findApiKey(key!.prefix))?.revokedAt).toBeNull();

    clock.ms = T0 + 1_000;
    try {
      expect((await store.tenancy.revokeKey(org.id, key!.id))?.revokedAt).toBe(T0 + 1_000);
      clock.ms = T0 + 2_000;
      expect((await other.tenancy.revokeKey(org.id, key!.id))?.revokedAt).toBe(T0 + 1_000); // the first revocation stands
    } finally {
      clock.ms = T0;
    }
  });

  it('counts live keys per project and keeps the newest last-use time', async () => {
    const org = await newOrg();
    const project = await defaultProject(org);
    const live = await store.tenancy.createKey(keyOf(org, project));
    const expired = await store.tenancy.createKey(keyOf(org, project, { expiresAt: T0 - 1 }));
    const revoked = await store.tenancy.createKey(keyOf(org, project));
    await store.tenancy.revokeKey(org.id, revoked!.id);
    expect((await store.tenancy.listProjects(org.id))[0]?.liveKeys).toBe(1);

    await store.tenancy.touchKeys(new Map([[live!.id, T0 + 500], [expired!.id, T0 + 100]]));
    await other.tenancy.touchKeys(new Map([[live!.id, T0 + 300]])); // an older batch arriving late
    expect((await store.tenancy.getKey(org.id, live!.id))?.lastUsedAt).toBe(T0 + 500);
    expect((await store.tenancy.getKey(org.id, expired!.id))?.lastUsedAt).toBe(T0 + 100);
    await store.tenancy.touchKeys(new Map());
  });

  it('lists credit entries (not charges) newest first with who added them, page by page', async () => {
    const org = await newOrg(1_000);
    const user = await store.accounts.createUser(`${newId('u')}@example.com`, 'scrypt$x', true);
    await store.addCredits(org.id, 2_000, 'top-up', user.id);
    await other.addCredits(org.id, -500, 'correction');
    expect(await store.reserve(org.id, newId('req'), 100)).toBe(true);
    const all = await store.tenancy.listCredits(org.id, 10);
    expect(all.map((c) => [c.amountMicros, c.note, c.createdBy?.email ?? null])).toEqual([
      [-500, 'correction', null], [2_000, 'top-up', user.email], [1_000, 'initial credits', null],
    ]);
    const first = await store.tenancy.listCredits(org.id, 2);
    const rest = await store.tenancy.listCredits(org.id, 2, first[1]?.id);
    expect([...first, ...rest]).toEqual(all);
    expect(await store.tenancy.listCredits((await newOrg()).id, 10)).toEqual([]);
  });

  it('lists orgs for an operator (all) and for a user (theirs, with their role)', async () => {
    const a = await newOrg();
    const b = await newOrg();
    const user = await store.accounts.createUser(`${newId('u')}@example.com`, 'scrypt$x', false);
    await store.accounts.addMember(b.id, user.id, 'admin');
    expect((await store.tenancy.listOrgs(user.id)).map((o) => [o.org.id, o.role])).toEqual([[b.id, 'admin']]);
    const everyone = (await other.tenancy.listOrgs(null)).map((o) => o.org.id);
    expect(everyone).toEqual(expect.arrayContaining([a.id, b.id]));
  });

  it('creates users with unique, case-insensitive emails and keeps the hash for sign-in only', async () => {
    const email = `${newId('u')}@Example.com`;
    const before = await store.accounts.countUsers();
    const user = await store.accounts.createUser(email, 'scrypt$hash', true);
    expect(user).toEqual({ id: expect.stringMatching(/^usr_/), email: email.toLowerCase(), operator: true, active: true, createdAt: T0 });
    await expect(other.accounts.createUser(email.toUpperCase(), 'scrypt$other', false)).rejects.toBeInstanceOf(DuplicateError);
    expect(await store.accounts.countUsers()).toBe(before + 1);
    expect(await other.accounts.getUser(user.id)).toEqual(user);
    expect(await store.accounts.findUserByEmail(email.toUpperCase())).toEqual({ ...user, passwordHash: 'scrypt$hash' });
    expect(await store.accounts.findUserByEmail('nobody@example.com')).toBeUndefined();
  });

  it('keeps at least one owner in every org, whatever the order of changes', async () => {
    const org = await newOrg();
    const [u1, u2] = await Promise.all([1, 2].map((i) => store.accounts.createUser(`${newId(`u${i}`)}@example.com`, 'x', false)));
    await store.accounts.addMember(org.id, u1!.id, 'owner');
    await expect(other.accounts.addMember(org.id, u1!.id, 'member')).rejects.toBeInstanceOf(DuplicateError);
    await store.accounts.addMember(org.id, u2!.id, 'member');
    expect(await store.accounts.removeMember(org.id, u1!.id)).toBe('last_owner');
    expect(await store.accounts.changeRole(org.id, u1!.id, 'admin')).toBe('last_owner');
    expect(await store.accounts.changeRole(org.id, u2!.id, 'owner')).toBe('ok');
    expect(await other.accounts.changeRole(org.id, u1!.id, 'admin')).toBe('ok');
    expect(await store.accounts.removeMember(org.id, u2!.id)).toBe('last_owner');
    expect(await store.accounts.removeMember(org.id, u1!.id)).toBe('ok');
    expect(await store.accounts.removeMember(org.id, u1!.id)).toBe('not_found');
    expect(await store.accounts.changeRole(org.id, 'usr_nobody', 'member')).toBe('not_found');
    expect(await store.accounts.listMembers(org.id)).toEqual([{ userId: u2!.id, email: u2!.email, role: 'owner', createdAt: T0, active: true }]);
    expect(await store.accounts.roleIn(org.id, u2!.id)).toBe('owner');
    expect(await store.accounts.membershipsOf(u2!.id)).toEqual([{ orgId: org.id, orgName: org.name, role: 'owner' }]);
  });

  it('ends sessions at their expiry, on delete and by the purge', async () => {
    const user = await store.accounts.createUser(`${newId('u')}@example.com`, 'x', false);
    await store.accounts.createSession('s1', user.id, T0 + 1_000);
    await store.accounts.createSession('s2', user.id, T0 + 5_000);
    expect(await other.accounts.sessionUser('s1')).toEqual(user);
    clock.ms = T0 + 1_000;
    try {
      expect(await store.accounts.sessionUser('s1')).toBeUndefined();
      expect(await store.accounts.purgeSessions()).toBeGreaterThanOrEqual(1);
      expect(await store.accounts.sessionUser('s2')).toEqual(user);
      await other.accounts.deleteSession('s2');
      expect(await store.accounts.sessionUser('s2')).toBeUndefined();
    } finally {
      clock.ms = T0;
    }
  });

  it("creates, finds and revokes management tokens; a user revokes only their own", async () => {
    const [a, b] = await Promise.all([1, 2].map((i) => store.accounts.createUser(`${newId(`t${i}`)}@example.com`, 'x', false)));
    const prefix = `tgm_${newId('p').slice(2, 10)}`;
    const token = await store.accounts.createToken(a!.id, 'deploy', prefix, 'd'.repeat(64));
    expect(await other.accounts.findToken(prefix)).toEqual(token);
    expect(await store.accounts.listTokens(a!.id)).toEqual([token]);
    expect(await store.accounts.revokeToken(b!.id, token.id)).toBeUndefined();
    clock.ms = T0 + 120_000;
    try {
      await store.accounts.touchToken(token.id);
      expect((await store.accounts.findToken(prefix))?.lastUsedAt).toBe(T0 + 120_000);
      expect((await other.accounts.revokeToken(a!.id, token.id))?.revokedAt).toBe(T0 + 120_000);
    } finally {
      clock.ms = T0;
    }
  });
  it('keeps invitations by email: listed for the invitee and the org while pending and unexpired, ended once, by the invitee or the org only', async () => {
    const org = await newOrg();
    const a = await store.accounts.createInvitation(org.id, 'Invitee@Example.test', 'admin', null, clock.ms + 1000);
    expect(a).toMatchObject({ orgId: org.id, orgName: org.name, email: 'invitee@example.test', role: 'admin', status: 'pending', createdAt: clock.ms, expiresAt: clock.ms + 1000 });
    expect((await other.accounts.invitationsFor('INVITEE@example.test')).map((i) => i.id)).toEqual([a.id]);
    expect((await other.accounts.orgInvitations(org.id)).map((i) => i.id)).toEqual([a.id]);
    expect(await store.accounts.resolveInvitation(a.id, 'accepted', { email: 'someone-else@example.test' })).toBeUndefined();
    expect(await store.accounts.resolveInvitation(a.id, 'revoked', { orgId: (await newOrg()).id })).toBeUndefined();
    // Two accepts at once: one ends it.
    const both = await Promise.all([store.accounts.resolveInvitation(a.id, 'accepted', { email: 'invitee@example.test' }), other.accounts.resolveInvitation(a.id, 'accepted', { email: 'invitee@example.test' })]);
    expect(both.filter((r) => r !== undefined).map((r) => r?.status)).toEqual(['accepted']);
    expect(await store.accounts.invitationsFor('invitee@example.test')).toEqual([]);
    const b = await store.accounts.createInvitation(org.id, 'invitee@example.test', 'member', null, clock.ms + 1000);
    clock.ms += 1000;
    expect(await store.accounts.invitationsFor('invitee@example.test')).toEqual([]);
    expect(await store.accounts.resolveInvitation(b.id, 'declined', { email: 'invitee@example.test' })).toBeUndefined();
  });
});
