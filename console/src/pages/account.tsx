import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, get, put, type MeSelf } from '../api';
import type { PageProps } from '../app';
import { ErrorBox, Field, Page, Show, useLoad, useSubmit } from '../ui';

/** The signed-in user: who they are, and a password change (absent for a user of single sign-on, who has none). */
export function AccountPage(_props: PageProps): JSX.Element {
  const me = useLoad((signal) => get<MeSelf>('/me', undefined, signal), []);
  return (
    <Page title="Account">
      <Show value={me}>
        {(m) => (
          <>
            <p>Signed in as <strong>{m.email}</strong>{m.operator ? ' (operator)' : ''}.</p>
            {m.has_password ? <ChangePassword /> : <p class="muted">You sign in with single sign-on: your password, if any, is your provider's.</p>}
          </>
        )}
      </Show>
    </Page>
  );
}

function ChangePassword(): JSX.Element {
  const [f, setF] = useState({ current: '', next: '' });
  const { error, busy, run } = useSubmit();
  const [done, setDone] = useState(false);
  const param = error instanceof ApiError ? error.param : null;
  const submit = (e: Event): void => {
    e.preventDefault();
    setDone(false);
    void run(async () => {
      await put('/me/password', { current_password: f.current, new_password: f.next }).catch((err: unknown) => {
        throw err instanceof ApiError && err.code === 'wrong_password' ? new Error('The current password is wrong.') : err;
      });
      setF({ current: '', next: '' });
      setDone(true);
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="change-password-title">
      <h2 id="change-password-title">Change password</h2>
      <div class="grid">
        <Field label="Current password">
          <input type="password" autoComplete="current-password" required value={f.current} onInput={(e) => setF({ ...f, current: e.currentTarget.value })} />
        </Field>
        <Field label="New password (at least 10 characters)" error={param === 'new_password' ? (error as Error).message : undefined}>
          <input type="password" autoComplete="new-password" required minLength={10} value={f.next} onInput={(e) => setF({ ...f, next: e.currentTarget.value })} />
        </Field>
      </div>
      {param === 'new_password' ? null : <ErrorBox error={error} />}
      {done ? <p role="status">Password changed. Your other sessions have been signed out.</p> : null}
      <div class="actions"><button type="submit" disabled={busy}>Change password</button></div>
    </form>
  );
}
