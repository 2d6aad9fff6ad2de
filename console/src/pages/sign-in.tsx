import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, post, type Me } from '../api';

/** The sign-in form: email and password, a clear message on wrong credentials or throttling. */
export function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }): JSX.Element {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
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
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        {error ? <p class="error" role="alert">{error}</p> : null}
        <button type="submit" disabled={busy}>Sign in</button>
        <p class="muted small">The first start of the gateway prints an operator login (<code>admin@localhost</code> and a password).</p>
      </form>
    </main>
  );
}
