import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { query } from './cli-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { addUser, Api, code, PASSWORD, rows, sessionCookieOf, signIn, tokenApi } from './management-helpers.js';

/** Signing in and out, sessions, CSRF, management tokens and sign-in throttling, end to end. */
let clock = Date.UTC(2026, 10, 1, 12);
const t = useOrgGateway('acme', '5', {
  now: () => clock,
  yaml: { server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 5000, trust_proxy: true } },
});
const db = (): string => join(t.dir, 'gateway.db');
const anon = (ip = '192.0.2.1'): Api => new Api(t.url, { 'x-forwarded-for': ip });
let ownerId: string;

beforeAll(async () => {
  ownerId = await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  await addUser(t, 'op@tollgate.test', { operator: true });
});

describe('sessions', () => {
  it('signs in with an HttpOnly, SameSite=Lax cookie whose secret the database never holds', async () => {
    const r = await anon().post('/api/v1/session', { email: 'Owner@Acme.test', password: PASSWORD });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: ownerId, email: 'owner@acme.test', operator: false, orgs: [{ id: t.orgId, name: 'acme', role: 'owner' }] });
    const setCookie = r.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/);
    expect(setCookie).not.toContain('Secure'); // plain http
    const secret = sessionCookieOf(r).split('=')[1] ?? '';
    const stored = query<{ id: string; user_id: string }>(db(), 'SELECT id, user_id FROM sessions WHERE user_id = ?', ownerId);
    expect(stored.length).toBeGreaterThan(0);
    expect(JSON.stringify(stored)).not.toContain(secret);
    const me = await new Api(t.url, { cookie: sessionCookieOf(r) }).get('/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'owner@acme.test', orgs: [{ id: t.orgId, role: 'owner' }] });
    expect(me.headers.get('cache-control')).toBe('no-store');
    expect(me.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('marks the cookie Secure when reached over https (behind a trusted proxy)', async () => {
    const r = await anon().post('/api/v1/session', { email: 'owner@acme.test', password: PASSWORD }, { 'x-forwarded-proto': 'https' });
    expect(r.status).toBe(200);
    expect(r.headers.get('set-cookie')).toMatch(/; Secure$/);
  });

  it('refuses a wrong password and an unknown email alike (401 invalid_credentials), setting no cookie', async () => {
    for (const body of [{ email: 'owner@acme.test', password: 'wrong password!' }, { email: 'nobody@acme.test', password: PASSWORD }]) {
      const r = await anon('192.0.2.2').post('/api/v1/session', body);
      expect(r.status).toBe(401);
      expect(code(r)).toBe('invalid_credentials');
      expect(r.headers.get('set-cookie')).toBeNull();
    }
  });

  it('signs out: the session ends and the cookie is cleared', async () => {
    const api = await signIn(t.url, 'owner@acme.test');
    const out = await api.delete('/api/v1/session');
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^tollgate_session=; .*Max-Age=0/);
    const after = await api.get('/api/v1/me');
    expect(after.status).toBe(401);
    expect(code(after)).toBe('authentication_required');
  });

  it('ends a session after 12 hours', async () => {
    const api = await signIn(t.url, 'owner@acme.test');
    clock += 12 * 3600_000 - 1;
    expect((await api.get('/api/v1/me')).status).toBe(200);
    clock += 1;
    expect((await api.get('/api/v1/me')).status).toBe(401);
  });

  it('tells a page whether it is signed in (GET /api/v1/session), never with a 401', async () => {
    const api = await signIn(t.url, 'owner@acme.test');
    const r = await api.get('/api/v1/session');
    expect([r.status, r.headers.get('cache-control')]).toEqual([200, 'no-store']);
    expect(r.body).toMatchObject({ user: { id: ownerId, email: 'owner@acme.test', operator: false, orgs: [{ id: t.orgId, name: 'acme', role: 'owner' }] } });
    for (const other of [anon(), new Api(t.url, { cookie: 'tollgate_session=forged' })]) {
      const none = await other.get('/api/v1/session');
      expect([none.status, none.body]).toEqual([200, { user: null }]);
    }
    await api.delete('/api/v1/session');
    expect((await api.get('/api/v1/session')).body).toEqual({ user: null });
  });

  it('answers 401 without a session or token, and for a made-up cookie', async () => {
    for (const api of [anon(), new Api(t.url, { cookie: 'tollgate_session=forged' })]) {
      const r = await api.get('/api/v1/me');
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'authentication_required', type: 'authentication_error' });
    }
  });
});

describe('sign-in throttling', () => {
  it('refuses an account after 5 failures in a minute with 429 and retry-after, even with the right password', async () => {
    await addUser(t, 'target@acme.test');
    for (let i = 0; i < 5; i++) expect((await anon(`198.51.100.${i}`).post('/api/v1/session', { email: 'target@acme.test', password: `guess number ${i}` })).status).toBe(401);
    const r = await anon('198.51.100.99').post('/api/v1/session', { email: 'target@acme.test', password: PASSWORD });
    expect(r.status).toBe(429);
    expect(code(r)).toBe('login_throttled');
    expect(r.body.error).toMatchObject({ message: expect.stringContaining('account') });
    const wait = Number(r.headers.get('retry-after'));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(60);
    clock += wait * 1000;
    expect((await anon('198.51.100.99').post('/api/v1/session', { email: 'target@acme.test', password: PASSWORD })).status).toBe(200);
  });

  it('refuses an address after 20 failures in a minute, whatever the accounts', async () => {
    const ip = '203.0.113.7';
    for (let i = 0; i < 20; i++) expect((await anon(ip).post('/api/v1/session', { email: `spray${i}@acme.test`, password: 'not the one!' })).status).toBe(401);
    const r = await anon(ip).post('/api/v1/session', { email: 'owner@acme.test', password: PASSWORD });
    expect(r.status).toBe(429);
    expect(r.body.error).toMatchObject({ message: expect.stringContaining('address') });
    expect((await anon('203.0.113.8').post('/api/v1/session', { email: 'owner@acme.test', password: PASSWORD })).status).toBe(200);
    clock += 60_000;
  });
});

describe('CSRF: state-changing requests signed in by cookie must come from the gateway itself', () => {
  const projects = async (api: Api): Promise<string[]> => rows(await api.get(`/api/v1/orgs/${t.orgId}/projects`)).map((p) => p.name as string);

  it('refuses a foreign Origin (or Referer), or none, with 403 and changes nothing', async () => {
    const api = await signIn(t.url, 'owner@acme.test');
    const before = await projects(api);
    for (const headers of <Array<Record<string, string>>>[
      { origin: 'https://evil.example' }, { origin: 'null' }, { origin: t.url.replace('127.0.0.1', 'localhost') },
      { origin: '', referer: 'https://evil.example/page' }, { origin: '' },
    ]) {
      const r = await api.post(`/api/v1/orgs/${t.orgId}/projects`, { name: `csrf-${Object.values(headers).join('|')}` }, headers);
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(code(r)).toBe('cross_origin_refused');
    }
    expect(await projects(api)).toEqual(before);
    const sameReferer = await api.post(`/api/v1/orgs/${t.orgId}/projects`, { name: 'via-referer' }, { origin: '', referer: `${t.url}/console/projects` });
    expect(sameReferer.status).toBe(201);
    expect((await api.get(`/api/v1/orgs/${t.orgId}/projects`, { origin: 'https://evil.example' })).status).toBe(200); // reads are not state-changing
  });

  it('refuses a sign-in posted from another site (login CSRF)', async () => {
    const r = await anon().post('/api/v1/session', { email: 'owner@acme.test', password: PASSWORD }, { origin: 'https://evil.example' });
    expect(r.status).toBe(403);
    expect(code(r)).toBe('cross_origin_refused');
    expect(r.headers.get('set-cookie')).toBeNull();
  });
});

describe('management tokens', () => {
  it('are shown once, stored hashed, act with their user\'s rights without an Origin, and stop at once when revoked', async () => {
    const api = await signIn(t.url, 'owner@acme.test');
    const created = await api.post('/api/v1/tokens', { name: 'deploy bot' });
    expect(created.status).toBe(201);
    const token = created.body.token as string;
    expect(token).toMatch(/^tgm_[A-Za-z0-9]{40}$/);
    expect(created.body).toMatchObject({ name: 'deploy bot', prefix: token.slice(0, 12), last_used_at: null, revoked_at: null });
    const listed = await api.get('/api/v1/tokens');
    expect(JSON.stringify(listed.body)).not.toContain(token);
    expect(rows(listed).map((r) => r.id)).toContain(created.body.id);
    expect(JSON.stringify(query(db(), 'SELECT * FROM mgmt_tokens'))).not.toContain(token.slice(12));

    const bot = tokenApi(t.url, token);
    expect((await bot.get('/api/v1/me')).body).toMatchObject({ email: 'owner@acme.test' });
    const made = await bot.post(`/api/v1/orgs/${t.orgId}/projects`, { name: 'made-by-bot' }, { origin: 'https://ci.example' });
    expect(made.status).toBe(201);
    const revoked = await api.delete(`/api/v1/tokens/${created.body.id as string}`);
    expect(revoked.body).toMatchObject({ id: created.body.id, revoked_at: expect.any(String) });
    const after = await bot.get('/api/v1/me');
    expect(after.status).toBe(401);
    expect(code(after)).toBe('invalid_token');
  });

  it('refuse malformed and unknown tokens, and another user\'s token id (404)', async () => {
    for (const value of ['Bearer tgm_short', `Bearer tgm_${'A'.repeat(40)}`, 'Basic abc', 'Bearer tg_notamanagementtoken']) {
      const r = await new Api(t.url, { authorization: value }).get('/api/v1/me');
      expect(r.status).toBe(401);
      expect(code(r)).toBe('invalid_token');
    }
    const owner = await signIn(t.url, 'owner@acme.test');
    const mine = await owner.post('/api/v1/tokens', { name: 'mine' });
    const op = await signIn(t.url, 'op@tollgate.test');
    expect((await op.delete(`/api/v1/tokens/${mine.body.id as string}`)).status).toBe(404);
    expect((await tokenApi(t.url, mine.body.token as string).get('/api/v1/me')).status).toBe(200);
  });
});

describe('bad input', () => {
  it('answers 400 naming the field: missing, unknown, wrong type, out of range, bad JSON', async () => {
    const api = await signIn(t.url, 'owner@acme.test');
    const projectId = ((await api.get(`/api/v1/orgs/${t.orgId}/projects`)).body.data as Array<{ id: string }>)[0]?.id ?? '';
    const cases: Array<[() => ReturnType<Api['post']>, string | null, RegExp]> = [
      [() => anon().post('/api/v1/session', { email: 'owner@acme.test' }), 'password', /^Password is required$/],
      [() => api.post(`/api/v1/orgs/${t.orgId}/projects`, { name: 'x', colour: 'red' }), 'colour', /"colour" is not a known field/],
      [() => api.post(`/api/v1/orgs/${t.orgId}/projects`, { name: 42 }), 'name', /^Name must be text$/],
      [() => api.post(`/api/v1/orgs/${t.orgId}/projects/nope/keys`, { allowed_models: ['gpt-4o-mini', ''] }), 'allowed_models[1]', /^Allowed models, item 2, must not be empty$/],
      [() => api.get(`/api/v1/orgs/${t.orgId}/logs?limit=0`), 'limit', /^Limit must be at least 1$/],
      [() => api.get(`/api/v1/orgs/${t.orgId}/logs?status=teapot`), 'status', /^Status must match the pattern/],
      [() => api.get(`/api/v1/orgs/${t.orgId}/projects?sort=name`), 'sort', /"sort" is not a known field of the querystring/],
      [() => api.post(`/api/v1/orgs/${t.orgId}/projects`, '{"name":'), null, /not well-formed JSON/],
      // Issue 35: project names are slugs, refused in words with the slug they could be.
      [() => api.post(`/api/v1/orgs/${t.orgId}/projects`, { name: 'My Project!' }), 'name',
        /^A project name is a slug: lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 64 characters, e\.g\. "my-project"$/],
      [() => api.post(`/api/v1/orgs/${t.orgId}/projects/${projectId}/keys`, { allowed_models: ['claude-3-5-haiku'] }), 'allowed_models[0]',
        /^No provider serves a model "claude-3-5-haiku"; did you mean claude-haiku-4-5\? \(the Models page lists them\)$/],
    ];
    for (const [call, param, message] of cases) {
      const r = await call();
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param });
      expect((r.body.error as { message: string }).message).toMatch(message);
    }
  });
});

describe('sign-in options without SSO', () => {
  it('offers passwords only, and the SSO routes say SSO is not configured', async () => {
    expect((await anon().get('/api/v1/session/options')).body).toEqual({ sso: false, password: true });
    const start = await anon().get('/api/v1/session/oidc/start');
    expect(start.status).toBe(404);
    expect(code(start)).toBe('sso_not_configured');
  });
});
