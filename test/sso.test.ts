import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from './cli-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { addUser, Api, code, PASSWORD } from './management-helpers.js';
import { oidcYaml, startIdp, type TestIdp } from './oidc-idp.js';

/*
 * OIDC single sign-on against a real OpenID provider (oidc-provider) on loopback
 * (test/oidc-idp.ts). The provider's login is completed by a test-only interaction handler
 * (the account to sign in as is `idp.next`); everything else — discovery, the authorization
 * request with PKCE, state and nonce, the provider's redirects, the code exchange, the ID
 * token's signature — is the real flow, driven with fetch as a browser would follow it.
 * test/sso-browser.test.ts signs in from headless Chromium.
 */
const CALLBACK = '/api/v1/session/oidc/callback';
let idp: TestIdp;
/** How far the gateway's clock (`now`) is ahead of the real one. */
const clock = { offsetMs: 0 };

const t = useOrgGateway('acme', '5', async () => {
  idp = await startIdp();
  return { yaml: { console: { oidc: oidcYaml(idp, { allow_password_login: false }) } }, now: () => Date.now() + clock.offsetMs };
});

beforeAll(() => idp.configure(t.url + CALLBACK, { idTokenTtl: 60 }));

afterAll(async () => {
  await idp?.close();
});

/** A cookie jar per browser: name → value (paths ignored: each test's browser is fresh). */
class Jar {
  readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair = ''] = c.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(c)) this.cookies.delete(pair.slice(0, eq));
      else this.cookies.set(pair.slice(0, eq), value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

interface Tamper {
  /** Changes the authorization request on its way to the provider. */
  authUrl?: (u: URL) => void;
  /** Changes the provider's answer on its way back to the gateway. */
  callback?: (u: URL) => void;
  /** Drops the gateway's flow cookie (a callback from another browser). */
  dropFlowCookie?: boolean;
}

/** Signs in with SSO as `account` the way a browser follows the redirects; returns the callback's answer and the gateway's cookies. */
async function ssoSignIn(account: string, tamper: Tamper = {}, accept = '*/*'): Promise<{ res: Response; body: string; gateway: Jar; callbackUrl: URL }> {
  idp.next = account;
  const gateway = new Jar();
  const provider = new Jar();
  const start = await fetch(`${t.url}/api/v1/session/oidc/start`, { redirect: 'manual' });
  expect(start.status).toBe(303);
  gateway.take(start);
  let next = new URL(start.headers.get('location') ?? '');
  expect(next.origin).toBe(idp.issuer);
  expect(next.searchParams.get('code_challenge_method')).toBe('S256');
  tamper.authUrl?.(next);
  for (let hop = 0; hop < 10 && next.origin === idp.issuer; hop++) {
    const r = await fetch(next, { redirect: 'manual', headers: { cookie: provider.header() } });
    provider.take(r);
    const location = r.headers.get('location');
    if (!location) throw new Error(`the provider answered ${r.status} without a redirect: ${await r.text()}`);
    next = new URL(location, next);
  }
  expect(next.origin + next.pathname).toBe(t.url + CALLBACK);
  tamper.callback?.(next);
  if (tamper.dropFlowCookie) gateway.cookies.delete('tollgate_oidc_state');
  const res = await fetch(next, { redirect: 'manual', headers: { cookie: gateway.header(), accept } });
  gateway.take(res);
  return { res, body: await res.text(), gateway, callbackUrl: next };
}

const asBrowser = (jar: Jar): Api => new Api(t.url, { cookie: `tollgate_session=${jar.cookies.get('tollgate_session') ?? ''}`, origin: t.url });

/** Expects a refused callback: 401 sso_failed, no session. */
function expectRefused(r: { res: Response; body: string; gateway: Jar }, reason: RegExp): void {
  expect(r.res.status, r.body).toBe(401);
  const error = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
  expect(error.code).toBe('sso_failed');
  expect(error.message).toMatch(reason);
  expect(r.gateway.cookies.has('tollgate_session')).toBe(false);
}

describe('OIDC sign-in', () => {
  it('tells the sign-in page that SSO is on and passwords are off', async () => {
    const r = await new Api(t.url).get('/api/v1/session/options');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ sso: true, password: false });
  });

  it('creates the user on first sign-in with the role its group gives, a session /api/v1/me accepts, and no password', async () => {
    idp.groups.set('alice', ['acme-admins']);
    const r = await ssoSignIn('alice');
    expect(r.res.status, r.body).toBe(303);
    expect(r.res.headers.get('location')).toBe('/console/');
    const me = await asBrowser(r.gateway).get('/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'alice@acme.test', operator: false, has_password: false, orgs: [{ id: t.orgId, name: 'acme', role: 'admin' }] });
    const [row] = query<{ password_hash: string }>(`${t.dir}/gateway.db`, 'SELECT password_hash FROM users WHERE email = ?', 'alice@acme.test');
    expect(row?.password_hash).not.toMatch(/^scrypt\$/);
    // The flow was spent: nothing of it is left in the database.
    expect(query(`${t.dir}/gateway.db`, 'SELECT * FROM oidc_flows')).toEqual([]);
  });

  it('a user of single sign-on has no password to change, and a deactivated one cannot sign in', async () => {
    idp.groups.set('dora', ['acme-users']);
    const first = await ssoSignIn('dora');
    expect(first.res.status, first.body).toBe(303);
    const pw = await asBrowser(first.gateway).put('/api/v1/me/password', { current_password: 'sso:no-password', new_password: 'a-new-long-password' });
    expect(pw).toMatchObject({ status: 409, body: { error: { code: 'password_not_set' } } });
    const [row] = query<{ id: string }>(`${t.dir}/gateway.db`, 'SELECT id FROM users WHERE email = ?', 'dora@acme.test');
    await t.gateway.store.lifecycle.setActive(row!.id, false);
    const again = await ssoSignIn('dora');
    expect(again.res.status, again.body).toBe(401);
    expect(JSON.parse(again.body)).toMatchObject({ error: { code: 'account_deactivated' } });
    expect(again.gateway.cookies.has('tollgate_session')).toBe(false);
  });

  it('follows the groups at every sign-in: changed, operator added, and removed when the group is gone', async () => {
    idp.groups.set('bob', ['acme-admins', 'acme-users']);
    let r = await ssoSignIn('bob');
    expect((await asBrowser(r.gateway).get('/api/v1/me')).body).toMatchObject({ operator: false, orgs: [{ name: 'acme', role: 'admin' }] });

    idp.groups.set('bob', ['acme-users', 'platform']);
    r = await ssoSignIn('bob');
    expect((await asBrowser(r.gateway).get('/api/v1/me')).body).toMatchObject({ operator: true, orgs: [{ name: 'acme', role: 'member' }] });

    idp.groups.set('bob', []);
    r = await ssoSignIn('bob');
    const me = await asBrowser(r.gateway).get('/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'bob@acme.test', operator: false, orgs: [] });
    expect((await asBrowser(r.gateway).get(`/api/v1/orgs/${t.orgId}`)).status).toBe(404);
  });

  it('refuses a callback whose state was changed', async () => {
    idp.groups.set('carol', ['acme-users']);
    expectRefused(await ssoSignIn('carol', { callback: (u) => u.searchParams.set('state', 'forged-state-value') }), /state/);
  });

  it('sends a browser whose callback is refused back to the sign-in page with the reason; an API client gets the JSON error', async () => {
    idp.groups.set('carol', ['acme-users']);
    const forged = { callback: (u: URL) => u.searchParams.set('state', 'forged-state-value') };
    const page = await ssoSignIn('carol', forged, 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
    expect(page.res.status, page.body).toBe(303);
    expect(page.res.headers.get('location')).toBe('/console/?sso_error=sso_failed');
    expect(page.gateway.cookies.has('tollgate_session')).toBe(false);
    expectRefused(await ssoSignIn('carol', forged, 'application/json, text/html'), /state/);
  });

  it('refuses a callback from a browser that did not start the sign-in (no flow cookie)', async () => {
    expectRefused(await ssoSignIn('carol', { dropFlowCookie: true }), /state/);
  });

  it('refuses a replayed callback: a flow is used once', async () => {
    const first = await ssoSignIn('carol');
    expect(first.res.status, first.body).toBe(303);
    // The same answer again, with the flow cookie the browser had.
    const again = await fetch(first.callbackUrl, { redirect: 'manual', headers: { cookie: `tollgate_oidc_state=${first.callbackUrl.searchParams.get('state')}` } });
    const jar = new Jar();
    jar.take(again);
    expectRefused({ res: again, body: await again.text(), gateway: jar }, /already used|expired/);
  });

  it('refuses an altered code (the provider refuses it at the token endpoint)', async () => {
    expectRefused(await ssoSignIn('carol', { callback: (u) => u.searchParams.set('code', `${u.searchParams.get('code') ?? ''}x`) }), /invalid_grant/);
  });

  it('refuses an ID token whose nonce is not the flow\'s', async () => {
    expectRefused(await ssoSignIn('carol', { authUrl: (u) => u.searchParams.set('nonce', 'a-nonce-the-gateway-never-made') }), /nonce/);
  });

  it('refuses a flow older than its ten minutes', async () => {
    try {
      expectRefused(await ssoSignIn('carol', { callback: () => { clock.offsetMs = 11 * 60_000; } }), /expired/);
    } finally {
      clock.offsetMs = 0;
    }
  });

  it('refuses an expired ID token (the provider\'s live 60 s; it arrives two minutes later by the gateway\'s clock)', async () => {
    try {
      expectRefused(await ssoSignIn('carol', { callback: () => { clock.offsetMs = 2 * 60_000; } }), /"exp"/);
    } finally {
      clock.offsetMs = 0;
    }
  });

  it('refuses an ID token whose signature does not verify', async () => {
    idp.tamperIdToken = true;
    try {
      expectRefused(await ssoSignIn('carol'), /signature/i);
    } finally {
      idp.tamperIdToken = false;
    }
  });

  it('refuses password sign-in when allow_password_login is false, even with the right password', async () => {
    await addUser(t, 'dave@acme.test', { org: 'acme', role: 'owner' });
    const r = await new Api(t.url).post('/api/v1/session', { email: 'dave@acme.test', password: PASSWORD });
    expect(r.status).toBe(403);
    expect(code(r)).toBe('password_login_disabled');
    expect(r.headers.get('set-cookie')).toBeNull();
  });
});
