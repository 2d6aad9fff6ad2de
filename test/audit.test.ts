import { beforeAll, describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { addUser, Api, type Obj, PASSWORD, rows, signIn, tokenApi } from './management-helpers.js';

/**
 * The audit log (issue 32): every mutating route of the OpenAPI document, called with
 * valid input, leaves exactly one row naming the right actor; the key-limit question;
 * sign-ins; masking; and no route that edits or deletes a row.
 */
let clock = Date.UTC(2026, 10, 3, 12);
// Webhooks to loopback (no task runs here: nothing is delivered anywhere).
const t = useOrgGateway('acme', '10', { now: () => clock, yaml: { webhooks: { allow_private_urls: true } } }, { ledger: true });
let owner: Api;
let op: Api;
let ownerToken: Api;
const org = (): string => `/api/v1/orgs/${t.orgId}`;

beforeAll(async () => {
  await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  await addUser(t, 'op@tollgate.test', { operator: true });
  for (const e of ['alice@acme.test', 'bob@acme.test', 'carol@acme.test', 'dan@acme.test', 'gina@acme.test']) await addUser(t, e);
  owner = await signIn(t.url, 'owner@acme.test');
  op = await signIn(t.url, 'op@tollgate.test');
  const tok = await owner.post('/api/v1/tokens', { name: 'script' });
  ownerToken = tokenApi(t.url, tok.body.token as string);
});

/** Every row of the instance's log, newest first (the operator's view). */
async function allRows(): Promise<Obj[]> {
  const r = await op.get('/api/v1/audit?limit=500');
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return rows(r);
}

const defaultProject = async (): Promise<string> => rows(await owner.get(`${org()}/projects`)).find((p) => p.name === 'default')?.id as string;
const newKey = async (): Promise<Obj> => (await owner.post(`${org()}/projects/${await defaultProject()}/keys`, { name: 'k' })).body;
const provider = async (): Promise<string> => ((await owner.get(`${org()}/provider-keys`)).body.providers as string[])[0] as string;
async function invite(email: string): Promise<string> {
  const r = await owner.post(`${org()}/members`, { email, role: 'member' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return (r.body.invitation as Obj).id as string;
}

interface Sample {
  /** Rows written while preparing are not counted. */
  prepare?: () => Promise<Obj>;
  call: (p: Obj) => Promise<{ status: number }>;
  action: string;
  /** The actor's email (`command line`, or the email a failed sign-in named). */
  actor: string;
}

/** A valid call of every mutating route, by its OpenAPI method and path: a new route without one fails the walk below. */
const SAMPLES: Record<string, Sample> = {
  'POST /api/v1/session': { call: () => new Api(t.url).post('/api/v1/session', { email: 'owner@acme.test', password: PASSWORD }), action: 'session.sign_in', actor: 'owner@acme.test' },
  'DELETE /api/v1/session': {
    prepare: async () => ({ api: await signIn(t.url, 'alice@acme.test') }), call: (p) => (p.api as Api).delete('/api/v1/session'), action: 'session.sign_out', actor: 'alice@acme.test',
  },
  'POST /api/v1/tokens': { call: () => owner.post('/api/v1/tokens', { name: 'ci' }), action: 'token.create', actor: 'owner@acme.test' },
  'DELETE /api/v1/tokens/{token}': {
    prepare: async () => (await owner.post('/api/v1/tokens', { name: 'gone' })).body, call: (p) => owner.delete(`/api/v1/tokens/${p.id as string}`), action: 'token.revoke', actor: 'owner@acme.test',
  },
  'POST /api/v1/invitations/{invitation}/accept': {
    prepare: async () => ({ id: await invite('bob@acme.test'), api: await signIn(t.url, 'bob@acme.test') }),
    call: (p) => (p.api as Api).post(`/api/v1/invitations/${p.id as string}/accept`), action: 'invitation.accept', actor: 'bob@acme.test',
  },
  'POST /api/v1/invitations/{invitation}/decline': {
    prepare: async () => ({ id: await invite('carol@acme.test'), api: await signIn(t.url, 'carol@acme.test') }),
    call: (p) => (p.api as Api).post(`/api/v1/invitations/${p.id as string}/decline`), action: 'invitation.decline', actor: 'carol@acme.test',
  },
  'POST /api/v1/orgs': { call: () => op.post('/api/v1/orgs', { name: 'beta' }), action: 'org.create', actor: 'op@tollgate.test' },
  // Re-reads the gateway's own (unchanged) gateway.yaml: instance-wide, no org.
  'POST /api/v1/reload': { call: () => op.post('/api/v1/reload'), action: 'config.reload', actor: 'op@tollgate.test' },
  'POST /api/v1/orgs/{org}/projects': { call: () => owner.post(`${org()}/projects`, { name: 'web' }), action: 'project.create', actor: 'owner@acme.test' },
  'PATCH /api/v1/orgs/{org}/projects/{project}': {
    prepare: async () => ({ id: await defaultProject() }), call: (p) => ownerToken.patch(`${org()}/projects/${p.id as string}`, { default_max_tokens: 100 }), action: 'project.update', actor: 'owner@acme.test',
  },
  'POST /api/v1/orgs/{org}/projects/{project}/keys': {
    prepare: async () => ({ id: await defaultProject() }), call: (p) => owner.post(`${org()}/projects/${p.id as string}/keys`, {}), action: 'key.create', actor: 'owner@acme.test',
  },
  'PATCH /api/v1/orgs/{org}/keys/{key}': { prepare: newKey, call: (p) => owner.patch(`${org()}/keys/${p.id as string}`, { limits: { rpm: 5 } }), action: 'key.update_limits', actor: 'owner@acme.test' },
  'DELETE /api/v1/orgs/{org}/keys/{key}': { prepare: newKey, call: (p) => owner.delete(`${org()}/keys/${p.id as string}`), action: 'key.revoke', actor: 'owner@acme.test' },
  'POST /api/v1/orgs/{org}/credits': { call: () => op.post(`${org()}/credits`, { amount_usd: '5' }), action: 'credits.add', actor: 'op@tollgate.test' },
  'PUT /api/v1/orgs/{org}/provider-keys/{provider}': {
    prepare: async () => ({ id: await provider() }), call: (p) => owner.put(`${org()}/provider-keys/${p.id as string}`, { key: 'sk-walk-0123456789abcdef' }), action: 'provider_key.set', actor: 'owner@acme.test',
  },
  'DELETE /api/v1/orgs/{org}/provider-keys/{provider}': {
    prepare: async () => {
      const id = await provider();
      await owner.put(`${org()}/provider-keys/${id}`, { key: 'sk-walk-0123456789abcdef' });
      return { id };
    },
    call: (p) => owner.delete(`${org()}/provider-keys/${p.id as string}`), action: 'provider_key.delete', actor: 'owner@acme.test',
  },
  'POST /api/v1/orgs/{org}/members': { call: () => owner.post(`${org()}/members`, { email: 'new@acme.test', role: 'admin' }), action: 'member.add', actor: 'owner@acme.test' },
  'PATCH /api/v1/orgs/{org}/members/{user}': {
    prepare: async () => ({ id: (await op.post(`${org()}/members`, { email: 'dan@acme.test', role: 'member' })).body.member && (((await op.get(`${org()}/members`)).body.data as Obj[]).find((m) => m.email === 'dan@acme.test')?.user_id) }),
    call: (p) => owner.patch(`${org()}/members/${p.id as string}`, { role: 'admin' }), action: 'member.update_role', actor: 'owner@acme.test',
  },
  'DELETE /api/v1/orgs/{org}/members/{user}': {
    prepare: async () => ({ id: ((await op.get(`${org()}/members`)).body.data as Obj[]).find((m) => m.email === 'dan@acme.test')?.user_id }),
    call: (p) => owner.delete(`${org()}/members/${p.id as string}`), action: 'member.remove', actor: 'owner@acme.test',
  },
  'PUT /api/v1/me/password': {
    prepare: async () => ({ api: await signIn(t.url, 'gina@acme.test') }),
    call: (p) => (p.api as Api).put('/api/v1/me/password', { current_password: PASSWORD, new_password: PASSWORD }), action: 'user.change_password', actor: 'gina@acme.test',
  },
  'PATCH /api/v1/users/{user}': { call: () => op.patch('/api/v1/users/gina@acme.test', { active: true }), action: 'user.set_active', actor: 'op@tollgate.test' },
  'POST /api/v1/orgs/{org}/keys/{key}/rotate': { prepare: newKey, call: (p) => owner.post(`${org()}/keys/${p.id as string}/rotate`, { grace_seconds: 60 }), action: 'key.rotate', actor: 'owner@acme.test' },
  'POST /api/v1/orgs/{org}/webhooks': { call: () => owner.post(`${org()}/webhooks`, { url: 'http://127.0.0.1:9/hook' }), action: 'webhook.create', actor: 'owner@acme.test' },
  'DELETE /api/v1/orgs/{org}/webhooks/{webhook}': {
    prepare: async () => (await owner.post(`${org()}/webhooks`, { url: 'http://127.0.0.1:9/gone' })).body,
    call: (p) => owner.delete(`${org()}/webhooks/${p.id as string}`), action: 'webhook.delete', actor: 'owner@acme.test',
  },
  'POST /api/v1/orgs/{org}/webhooks/{webhook}/test': {
    prepare: async () => (await owner.post(`${org()}/webhooks`, { url: 'http://127.0.0.1:9/test' })).body,
    call: (p) => owner.post(`${org()}/webhooks/${p.id as string}/test`), action: 'webhook.test', actor: 'owner@acme.test',
  },
  'PUT /api/v1/orgs/{org}/balance-alert': { call: () => owner.put(`${org()}/balance-alert`, { below_usd: '2' }), action: 'balance_alert.set', actor: 'owner@acme.test' },
  'DELETE /api/v1/orgs/{org}/invitations/{invitation}': {
    prepare: async () => ({ id: await invite('eve@acme.test') }), call: (p) => owner.delete(`${org()}/invitations/${p.id as string}`), action: 'invitation.revoke', actor: 'owner@acme.test',
  },
};

describe('every mutating route is audited', () => {
  it('walks the OpenAPI document: each mutating route, called with valid input, leaves exactly one row with its action and actor', async () => {
    const doc = (await new Api(t.url).get('/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const mutating = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).filter((m) => m !== 'get').map((m) => `${m.toUpperCase()} ${path}`));
    expect(mutating.length).toBeGreaterThan(15);
    expect(mutating.filter((k) => !SAMPLES[k]), 'mutating routes with no sample call here (add one, and an action in src/management/audit-routes.ts)').toEqual([]);
    // The session sign-out ends the caller's own session: keep it apart from the others.
    for (const key of mutating) {
      const s = SAMPLES[key] as Sample;
      const p = (await s.prepare?.()) ?? {};
      clock += 1000;
      const before = new Set((await allRows()).map((r) => r.id));
      const res = await s.call(p);
      expect(res.status, `${key}: ${JSON.stringify(res)}`).toBeLessThan(300);
      const fresh = (await allRows()).filter((r) => !before.has(r.id));
      expect(fresh.map((r) => r.action), key).toEqual([s.action]);
      expect((fresh[0]?.actor as Obj | undefined)?.email, key).toBe(s.actor);
      expect(fresh[0]?.at, key).toBe(new Date(clock).toISOString());
    }
  });

  it('names the token a change was made with', async () => {
    const r = await ownerToken.post(`${org()}/projects`, { name: 'by-token' });
    expect(r.status).toBe(201);
    const [row] = rows(await owner.get(`${org()}/audit?action=project.create&target=${r.body.id as string}`));
    expect(row?.actor).toMatchObject({ type: 'token', email: 'owner@acme.test', token_id: expect.stringMatching(/^tok_/) });
  });
});

describe('the audit page\'s questions', () => {
  it('answers who changed a key\'s limit, when, from what to what', async () => {
    const key = (await owner.post(`${org()}/projects/${await defaultProject()}/keys`, { name: 'limited', limits: { rpm: 10 } })).body;
    clock += 60_000;
    const patched = await owner.patch(`${org()}/keys/${key.id as string}`, { limits: { rpm: 20 } }, { 'user-agent': 'audit-test/1' });
    expect(patched.status).toBe(200);
    const r = await owner.get(`${org()}/audit?target=${key.id as string}&action=key.update_limits`);
    expect(r.status).toBe(200);
    expect(rows(r)).toHaveLength(1);
    expect(rows(r)[0]).toMatchObject({
      action: 'key.update_limits', target_type: 'key', target_id: key.id, org_id: t.orgId, at: new Date(clock).toISOString(),
      actor: { type: 'user', email: 'owner@acme.test' }, ip: '127.0.0.1', user_agent: 'audit-test/1',
      before: { limits: { rpm: 10 } }, after: { limits: { rpm: 20 } },
    });
  });

  it('records sign-ins and failed sign-ins, with the address and the email tried, never the password', async () => {
    const anon = new Api(t.url, { 'user-agent': 'browser/9' });
    expect((await anon.post('/api/v1/session', { email: 'owner@acme.test', password: 'wrong password here' })).status).toBe(401);
    clock += 1000;
    expect((await anon.post('/api/v1/session', { email: 'owner@acme.test', password: PASSWORD })).status).toBe(200);
    const [ok, failed] = rows(await op.get('/api/v1/audit?action=session.&limit=2'));
    expect(ok).toMatchObject({ action: 'session.sign_in', actor: { type: 'user', email: 'owner@acme.test' }, ip: '127.0.0.1', user_agent: 'browser/9' });
    expect(failed).toMatchObject({ action: 'session.sign_in_failed', actor: { type: 'anonymous', email: 'owner@acme.test', user_id: null }, after: { error: 'invalid_credentials' } });
    expect(JSON.stringify([ok, failed])).not.toContain('wrong password here');
    expect(JSON.stringify([ok, failed])).not.toContain(PASSWORD);
  });

  it('masks secrets: setting a provider key leaves no key text in the log, nor a new API key or token', async () => {
    const secret = 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWx9876';
    expect((await owner.put(`${org()}/provider-keys/${await provider()}`, { key: secret })).status).toBe(200);
    const created = await owner.post(`${org()}/projects/${await defaultProject()}/keys`, { name: 'masked' });
    const token = await owner.post('/api/v1/tokens', { name: 'masked' });
    const everything = JSON.stringify(await allRows());
    expect(everything).toContain('sk-…9876');
    for (const s of [secret, secret.slice(3, 20), created.body.key as string, token.body.token as string]) expect(everything).not.toContain(s);
    for (const format of ['csv', 'jsonl']) {
      const text = await (await fetch(`${t.url}/api/v1/audit?format=${format}`, { headers: op.headers })).text();
      expect(text).not.toContain(secret);
    }
  });

  it('exports as CSV and JSON lines, filtered', async () => {
    const res = await fetch(`${t.url}${org()}/audit?format=csv&action=key.update_limits`, { headers: owner.headers });
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await res.text()).trim().split('\r\n');
    expect(lines[0]).toBe('id,at,org_id,action,target_type,target_id,actor_type,actor_user_id,actor_email,actor_token_id,ip,user_agent,before,after');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.slice(1).every((l) => l.includes(',key.update_limits,key,'))).toBe(true);
    const jsonl = await (await fetch(`${t.url}${org()}/audit?format=jsonl&action=key.update_limits`, { headers: owner.headers })).text();
    const parsed = jsonl.trim().split('\n').map((l) => JSON.parse(l) as Obj);
    expect(parsed.length).toBe(lines.length - 1);
    expect(parsed.every((r) => r.action === 'key.update_limits')).toBe(true);
  });

  it('pages with a cursor: no row twice, none missed', async () => {
    const all = rows(await owner.get(`${org()}/audit?limit=500`));
    const seen: Obj[] = [];
    let cursor: string | null = null;
    do {
      const r = await owner.get(`${org()}/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...rows(r));
      cursor = r.body.next_cursor as string | null;
    } while (cursor);
    expect(seen.map((r) => r.id)).toEqual(all.map((r) => r.id));
  });

  it('shows an org only its own rows; a member may not read them; the instance-wide view is for operators', async () => {
    expect(rows(await owner.get(`${org()}/audit?limit=500`)).every((r) => r.org_id === t.orgId)).toBe(true);
    const member = await signIn(t.url, 'bob@acme.test');
    expect((await member.get(`${org()}/audit`)).status).toBe(403);
    expect((await owner.get('/api/v1/audit')).status).toBe(403);
  });
});

describe('append-only', () => {
  it('no route edits or deletes audit rows, and the database refuses an UPDATE', async () => {
    const doc = (await new Api(t.url).get('/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const auditPaths = Object.entries(doc.paths).filter(([p]) => /audit/.test(p));
    expect(auditPaths.length).toBe(2);
    for (const [, ops] of auditPaths) expect(Object.keys(ops)).toEqual(['get']);
    const [row] = await allRows();
    for (const m of ['DELETE', 'PATCH', 'PUT', 'POST']) expect((await op.call(m, `/api/v1/audit/${row?.id as string}`, m === 'DELETE' ? undefined : {})).status).toBe(404);
    const db = (t.gateway.store as unknown as { db: { prepare(sql: string): { run(...a: unknown[]): unknown } } }).db;
    expect(() => db.prepare('UPDATE audit_log SET action = ? WHERE id = ?').run('x', row?.id)).toThrow(/append-only/);
  });
});

describe('retention', () => {
  it('the audit-retention task deletes rows older than audit.retention_days (365) and keeps the rest', async () => {
    const store = t.gateway.store;
    const actor = { type: 'cli' as const, userId: null, email: 'command line', tokenId: null };
    const entry = { action: 'test.old', orgId: t.orgId, targetType: null, targetId: null, actor, ip: null, userAgent: null, before: null, after: null };
    await store.auditLog.append(entry, clock - 366 * 86_400_000);
    await store.auditLog.append({ ...entry, action: 'test.recent' }, clock - 364 * 86_400_000);
    const results = await t.gateway.runTasks();
    expect(results.find((r) => r.task === 'audit-retention')?.result).toMatch(/^deleted 1 audit row/);
    const left = rows(await op.get('/api/v1/audit?action=test.&limit=10')).map((r) => r.action);
    expect(left).toEqual(['test.recent']);
  });
});
