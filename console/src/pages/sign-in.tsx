import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, post, type Me } from '../api';

/** How the gateway signs in (GET /api/v1/session/options). */
interface SignInOptions {
  sso: boolean;
  password: boolean;
}

/** Why single sign-on failed, from the code the callback put in `?sso_error=` (docs/errors.md). */
const SSO_ERRORS: Record<string, string> = {
  sso_failed: 'Single sign-on failed: the provider\'s answer could not be verified, or the sign-in took too long. Try again.',
  account_deactivated: 'Single sign-on failed: this account is deactivated. Ask an operator to reactivate it.',
};

/** The reason of a failed single sign-on the callback redirected here with, once (the address is cleaned). */
function takeSsoError(): string {
  const params = new URLSearchParams(window.location.search);
  const code = params.get('sso_error');
  if (!code) return '';
  params.delete('sso_error');
  const rest = params.toString();
  window.history.replaceState(null, '', `${window.location.pathname}${rest ? `?${rest}` : ''}`);
  return SSO_ERRORS[code] ?? `Single sign-on failed (${code}). Try again.`;
}

/**
 * The sign-in form: email and password, a clear message on wrong credentials or
 * throttling, and "Sign in with SSO" when the gateway has OIDC configured (the password
 * form is hidden when it accepts SSO only).
 */
export function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }): JSX.Element {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [ssoError] = useState(takeSsoError);
  const [busy, setBusy] = useState(false);
  const [options, setOptions] = useState<SignInOptions>({ sso: false, password: true });
  useEffect(() => {
    get<SignInOptions>('/session/options').then(setOptions, () => undefined);
  }, []);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      onSignedIn(await post<Me>('/session', { email: email.trim(), password }));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'invalid_credentials') setError('Wrong email or password.');
      else if (err instanceof ApiError && err.code === 'login_throttled') {
        setError(`Too many failed sign-ins. Try again in ${err.retryAfter ?? 60} seconds.`);
      } else if (err instanceof ApiError && err.status === 400) setError('Enter your email address and password.');
      else setError(err instanceof Error ? `Signing in failed: ${err.message}` : 'Signing in failed.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <form onSubmit={(e) => void submit(e)} aria-labelledby="signin-title" novalidate>
        <p class="brand" aria-hidden="true">Tollgate</p>
        <h1 id="signin-title">Sign in to the console</h1>
        {ssoError ? <p class="error" role="alert">{ssoError}</p> : null}
        {options.sso ? <a class="button" href="/api/v1/session/oidc/start">Sign in with SSO</a> : null}
        {options.password ? (
          <>
            <label for="email">Email</label>
            <input id="email" name="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
            {error ? <p class="error" role="alert">{error}</p> : null}
            <button type="submit" disabled={busy}>Sign in</button>
          </>
        ) : null}
        {options.password ? <p class="muted small">The first start of the gateway prints an operator login (<code>admin@localhost</code> and a password).</p> : null}
      </form>
    </main>
  );
}
