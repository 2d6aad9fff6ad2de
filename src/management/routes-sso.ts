import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../lib/errors.js';
import { newSession, ownOrigin, readCookie, sessionCookie } from './credentials.js';
import type { ManagementDeps } from './deps.js';
import { route, type ManagementRoute } from './http.js';
import { CALLBACK_PATH, FLOW_TTL_MS, type OidcSignIn } from './oidc.js';
import { bool, obj, str } from './schemas.js';
import { recordChange } from './audit-hook.js';

/** The browser's flow cookie: the state of the sign-in it started, so a callback carrying another browser's state is refused. */
const FLOW_COOKIE = 'tollgate_oidc_state';
const FLOW_COOKIE_PATH = '/api/v1/session/oidc';

const REDIRECT = { description: 'A redirect (303) to the Location header', type: 'null' };

/** Whether the request is a browser's page load (Accept names text/html before or without application/json). */
function wantsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html >= 0 && (json < 0 || html < json);
}

/** What the sign-in page offers, and the two legs of OIDC sign-in (docs/management.md, "Single sign-on"). */
export function ssoRoutes(d: ManagementDeps): ManagementRoute[] {
  const configured = (): OidcSignIn => {
    if (!d.oidc) throw new GatewayError('sso_not_configured');
    return d.oidc;
  };
  /** The callback URL to register with the provider: from `console.public_url`, else as this request reached the gateway. */
  const redirectUri = (request: FastifyRequest): string => `${d.publicUrl ?? ownOrigin(request)}${CALLBACK_PATH}`;
  const flowCookie = (request: FastifyRequest, value: string, maxAgeMs: number): string =>
    sessionCookie(request, value, maxAgeMs).replace(/^[^=]+=/, `${FLOW_COOKIE}=`).replace('Path=/;', `Path=${FLOW_COOKIE_PATH};`);
  const redirect = (reply: FastifyReply, location: string): null => {
    void reply.code(303).header('location', location);
    return null;
  };
  return [
    route({
      method: 'GET', url: '/api/v1/session/options', access: 'public', tag: 'session',
      summary: 'How this gateway signs in, for the sign-in page: whether SSO is configured and whether email and password are accepted.',
      schema: { response: { 200: obj({ sso: bool('GET /api/v1/session/oidc/start signs in with the OIDC provider'), password: bool('POST /api/v1/session accepts email and password') }) } },
      async handler() {
        return { sso: d.oidc !== undefined, password: d.oidc?.settings.allowPasswordLogin ?? true };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/session/oidc/start', access: 'public', tag: 'session',
      summary: 'Starts single sign-on: redirects the browser to the OIDC provider (authorization code with PKCE, state and nonce kept in the database for ten minutes).',
      schema: { response: { 303: REDIRECT } },
      async handler(request, reply) {
        const { url, state } = await configured().start(redirectUri(request));
        void reply.header('set-cookie', flowCookie(request, state, FLOW_TTL_MS));
        return redirect(reply, url);
      },
    }),
    route({
      method: 'GET', url: CALLBACK_PATH, access: 'public', tag: 'session',
      summary: 'Where the OIDC provider sends the browser back: verifies the answer (state, PKCE, the ID token and its nonce), creates the user on a first sign-in, sets their org roles from their groups, sets the session cookie and redirects to /console/. A refused sign-in redirects a browser (Accept: text/html) to /console/?sso_error=<code>; other clients get the error (401 sso_failed, 403 account_deactivated).',
      schema: {
        querystring: { type: 'object', properties: { code: str(), state: str(), error: str(), error_description: str() }, additionalProperties: { type: 'string' } },
        response: { 303: REDIRECT },
      },
      async handler(request, reply) {
        const oidc = configured();
        const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
        const callbackUrl = new URL(redirectUri(request) + query);
        const bound = readCookie(request, FLOW_COOKIE);
        // The flow cookie is spent whatever the outcome.
        void reply.header('set-cookie', flowCookie(request, '', 0));
        let signedIn: Awaited<ReturnType<OidcSignIn['provision']>>;
        try {
          const { email, groups } = await oidc.finish(callbackUrl, bound === '' ? undefined : bound);
          signedIn = await oidc.provision(email, groups);
        } catch (err) {
          // A refused SSO sign-in is in the audit log like a refused password (nobody is signed in: no actor).
          const code = err instanceof GatewayError ? err.code : 'internal_error';
          await recordChange(d.store, request, { action: 'session.sign_in_failed', orgId: null, targetType: 'user', targetId: null, before: null, after: { method: 'sso', error: code } });
          // A browser goes back to the sign-in page, which shows why; an API client gets the error body.
          if (!(err instanceof GatewayError) || !wantsHtml(request)) throw err;
          request.log.info({ code: err.code, reason: err.message }, 'SSO sign-in refused');
          return redirect(reply, `${d.publicUrl ?? ''}/console/?sso_error=${encodeURIComponent(err.code)}`);
        }
        const { user, unknownOrgs, keptLastOwner } = signedIn;
        await recordChange(d.store, request, {
          action: 'session.sign_in', orgId: null, targetType: 'user', targetId: user.id, before: null, after: { method: 'sso' },
          actor: { type: 'user', userId: user.id, email: user.email, tokenId: null },
        });
        if (unknownOrgs.length > 0) request.log.warn({ orgs: unknownOrgs }, 'console.oidc.role_map names orgs that do not exist');
        if (keptLastOwner.length > 0) request.log.warn({ user: user.id, orgs: keptLastOwner }, 'SSO kept a role its groups no longer give: the user is the org\'s last owner');
        const { secret, id } = newSession();
        await d.store.accounts.createSession(id, user.id, d.now() + d.sessionTtlMs);
        void reply.header('set-cookie', [flowCookie(request, '', 0), sessionCookie(request, secret, d.sessionTtlMs)]);
        return redirect(reply, `${d.publicUrl ?? ''}/console/`);
      },
    }),
  ];
}
