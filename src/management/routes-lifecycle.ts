import { MAX_ROTATION_GRACE_SECONDS, rotateKey, setActive, setPassword } from '../tenancy/account-lifecycle.js';
import { GatewayError, invalidField } from '../lib/errors.js';
import type { User } from '../store/accounts.js';
import { callerOf, scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { changed, found, route, type ManagementRoute } from './http.js';
import { MAX_PASSWORD_LENGTH, verifyPassword } from '../tenancy/passwords.js';
import { bool, EMAIL, input, int, obj, params, str, time } from './schemas.js';
import { CREATED_KEY, iso, keyView } from './views.js';
import { NO_PASSWORD } from '../store/sso.js';

const USER = obj({
  id: str('usr_…'), email: EMAIL, operator: bool(), active: bool('False while deactivated: no sign-in, sessions or management tokens'), created_at: time(),
});
const userView = (u: User) => ({ id: u.id, email: u.email, operator: u.operator, active: u.active, created_at: iso(u.createdAt) });

const ROTATED_KEY = {
  ...CREATED_KEY,
  title: 'RotatedKey',
  properties: { ...(CREATED_KEY.properties as object), previous_expires_at: time('Until when the old secret is still accepted') },
  required: [...(CREATED_KEY.required as string[]), 'previous_expires_at'],
};

/** Password change, user deactivation and API key rotation (docs/management.md "Account lifecycle"). */
export function lifecycleRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  return [
    route({
      method: 'PUT', url: '/api/v1/me/password', access: 'user', tag: 'session',
      summary: 'Changes the caller\'s password: the current one is checked (failures count towards sign-in throttling); every other session of the user ends, this one stays.',
      schema: {
        body: input({ current_password: str('', { minLength: 1, maxLength: MAX_PASSWORD_LENGTH }), new_password: str('At least 10 characters', { maxLength: MAX_PASSWORD_LENGTH }) },
          ['current_password', 'new_password']),
        response: { 200: obj({ password_changed: bool() }) },
      },
      async handler(request) {
        const caller = callerOf(request);
        const b = request.body;
        const stored = await store.lifecycle.passwordHashOf(caller.user.id);
        if (!stored || stored === NO_PASSWORD) throw new GatewayError('password_not_set'); // a user of single sign-on
        const subject = { email: caller.user.email, ip: request.ip };
        const wait = await d.throttle.check(subject);
        if (wait.waitMs > 0) {
          const seconds = Math.max(1, Math.ceil(wait.waitMs / 1000));
          throw new GatewayError('login_throttled', [wait.scope, seconds], { headers: { 'retry-after': String(seconds) } });
        }
        if (!(await verifyPassword(b.current_password, stored))) {
          await d.throttle.failed(subject);
          throw new GatewayError('wrong_password');
        }
        try {
          await setPassword(store, caller.user.id, b.new_password, caller.sessionId);
        } catch (err) {
          if (err instanceof RangeError) throw invalidField('new_password', `"new_password": ${err.message}`);
          throw err;
        }
        return { password_changed: true };
      },
    }),
    route({
      method: 'PATCH', url: '/api/v1/users/:user', access: 'operator', tag: 'users',
      summary: 'Deactivates (`active: false`) or reactivates a user, by id or email. A deactivated user cannot sign in; their sessions end and their management tokens are refused at once, on every instance.',
      schema: { params: params('user'), body: input({ active: bool() }, ['active']), response: { 200: USER } },
      async handler(request) {
        const ref = request.params.user;
        const user = found(ref.includes('@') ? await store.accounts.findUserByEmail(ref) : await store.accounts.getUser(ref), `user ${ref}`);
        const { active } = request.body;
        if (!active && user.id === callerOf(request).user.id) throw invalidField('active', 'you cannot deactivate yourself');
        changed(await setActive(store, user.id, active), `user ${ref}`);
        return userView({ ...user, active });
      },
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/keys/:key/rotate', access: 'admin', tag: 'keys',
      summary: 'Gives an API key a new secret (shown in this response only), keeping its id, prefix, project, limits and usage. The old secret is accepted for `grace_seconds` (0 to 7 days) more, then refused by every instance.',
      schema: {
        params: params('org', 'key'),
        body: input({ grace_seconds: int('How long the old secret keeps working, 0 to 604800 (7 days)', { minimum: 0, maximum: MAX_ROTATION_GRACE_SECONDS }) }, ['grace_seconds']),
        response: { 200: ROTATED_KEY },
      },
      async handler(request) {
        const orgId = scopeOf(request).org.id;
        const id = request.params.key;
        const { grace_seconds: grace } = request.body;
        const rotated = found(await rotateKey(store, d.invalidation, orgId, id, grace, d.now()), `active API key ${id}`);
        const item = found(await store.tenancy.getKey(orgId, id), `active API key ${id}`);
        return { ...keyView(item, d.now()), key: rotated.key, previous_expires_at: iso(rotated.record.previousExpiresAt ?? d.now()) };
      },
    }),
  ];
}
