import { GatewayError } from '../lib/errors.js';
import { callerOf, sessionUser } from './authn.js';
import { newSession, newToken, sessionCookie, SESSION_COOKIE } from './credentials.js';
import type { ManagementDeps } from './deps.js';
import { found, route, type ManagementRoute } from './http.js';
import { verifyPassword } from '../tenancy/passwords.js';
import { bool, EMAIL, input, list, NAME, obj, params, str, time } from './schemas.js';
import { NO_PASSWORD } from '../store/sso.js';
import { iso, ME, ME_SELF, meView, TOKEN, tokenView } from './views.js';

const SIGNED_IN = { ...ME, title: 'SignedIn', properties: { ...(ME.properties as object), expires_at: time('When the session ends') }, required: [...(ME.required as string[]), 'expires_at'] };
const CREATED_TOKEN = { ...TOKEN, title: 'CreatedToken', properties: { ...(TOKEN.properties as object), token: str('The token: shown this once, stored only hashed') }, required: [...(TOKEN.required as string[]), 'token'] };

/** Signing in and out, the caller's own account, and their management tokens. */
export function accountRoutes(d: ManagementDeps): ManagementRoute[] {
  return [
    route({
      method: 'POST', url: '/api/v1/session', access: 'public', tag: 'session',
      summary: 'Sign in: sets the HttpOnly session cookie. Failed attempts are throttled per account and per client address (429).',
      schema: { body: input({ email: EMAIL, password: str('', { minLength: 1, maxLength: 1024 }) }, ['email', 'password']), response: { 200: SIGNED_IN } },
      async handler(request, reply) {
        if (d.oidc?.settings.allowPasswordLogin === false) throw new GatewayError('password_login_disabled');
        const { email, password } = request.body;
        const subject = { email: email.toLowerCase(), ip: request.ip };
        const wait = await d.throttle.check(subject);
        if (wait.waitMs > 0) {
          const seconds = Math.max(1, Math.ceil(wait.waitMs / 1000));
          throw new GatewayError('login_throttled', [wait.scope, seconds], { headers: { 'retry-after': String(seconds) } });
        }
        const user = await d.store.accounts.findUserByEmail(subject.email);
        // An unknown email costs the same hash as a wrong password: the timing does not say which accounts exist.
        const ok = await verifyPassword(password, user?.passwordHash ?? (await d.dummyHash()));
        if (!user || !ok) {
          await d.throttle.failed(subject);
          throw new GatewayError('invalid_credentials');
        }
        // Told only to someone who knows the password: the answer says nothing about other accounts.
        if (!user.active) throw new GatewayError('account_deactivated');
        const { secret, id } = newSession();
        const expiresAt = d.now() + d.sessionTtlMs;
        await d.store.accounts.createSession(id, user.id, expiresAt);
        void reply.header('set-cookie', sessionCookie(request, secret, d.sessionTtlMs));
        return { ...meView(user, await d.store.accounts.membershipsOf(user.id)), expires_at: iso(expiresAt) };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/session', access: 'public', tag: 'session',
      summary: 'Whether the request\'s session cookie is signed in: the user (as GET /api/v1/me) or null. Never 401, so a page can ask before showing a sign-in form.',
      schema: { response: { 200: obj({ user: { anyOf: [ME, { type: 'null' }] } }) } },
      async handler(request) {
        const user = await sessionUser(d.store, request);
        return { user: user && meView(user, await d.store.accounts.membershipsOf(user.id)) };
      },
    }),
    route({
      method: 'DELETE', url: '/api/v1/session', access: 'user', tag: 'session', summary: 'Sign out: ends the session and clears its cookie.',
      schema: { response: { 200: obj({ signed_out: bool() }) } },
      async handler(request, reply) {
        const caller = callerOf(request);
        if (caller.sessionId) await d.store.accounts.deleteSession(caller.sessionId);
        void reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`);
        return { signed_out: true };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/me', access: 'user', tag: 'session', summary: 'The signed-in user, whether they are an operator, whether they have a password (`has_password`: false for a user created by single sign-on), and their orgs with their roles.',
      schema: { response: { 200: ME_SELF } },
      async handler(request) {
        const { user } = callerOf(request);
        const hash = await d.store.lifecycle.passwordHashOf(user.id);
        return { ...meView(user, await d.store.accounts.membershipsOf(user.id)), has_password: !!hash && hash !== NO_PASSWORD };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/tokens', access: 'user', tag: 'tokens', summary: "The caller's management tokens (never the tokens themselves).",
      schema: { response: { 200: list(TOKEN) } },
      async handler(request) {
        return { data: (await d.store.accounts.listTokens(callerOf(request).user.id)).map(tokenView) };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/tokens', access: 'user', tag: 'tokens',
      summary: 'A management token (tgm_…) for automation: send it as "Authorization: Bearer"; it has its user\'s rights. Shown once.',
      schema: { body: input({ name: NAME }, ['name']), response: { 201: CREATED_TOKEN } },
      async handler(request, reply) {
        const { token, prefix, hash } = newToken();
        const created = await d.store.accounts.createToken(callerOf(request).user.id, request.body.name.trim(), prefix, hash);
        void reply.code(201);
        return { ...tokenView(created), token };
      },
    }),
    route({
      method: 'DELETE', url: '/api/v1/tokens/:token', access: 'user', tag: 'tokens', summary: 'Revokes one of the caller\'s tokens, at once.',
      schema: { params: params('token'), response: { 200: TOKEN } },
      async handler(request) {
        const id = request.params.token;
        return tokenView(found(await d.store.accounts.revokeToken(callerOf(request).user.id, id), `token ${id}`));
      },
    }),
  ];
}
