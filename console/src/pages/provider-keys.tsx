import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { del, get, put, type ProviderKey } from '../api';
import type { PageProps } from '../app';
import { when } from '../format';
import { Confirm, ErrorBox, Page, Show, useAction, useLoad, Field } from '../ui';

/** The org's own provider keys (bring your own key): masked, set or replace, remove. */
export function ProviderKeysPage({ org }: PageProps): JSX.Element {
  const keys = useLoad((signal) => get<{ data: ProviderKey[]; providers: string[] }>(`/orgs/${org.id}/provider-keys`, undefined, signal), [org.id]);
  const [provider, setProvider] = useState('');
  const [secret, setSecret] = useState('');
  const [removing, setRemoving] = useState<string | undefined>(undefined);
  const { act, error, done } = useAction(() => keys.reload());
  return (
    <Page title="Provider keys">
      <p class="muted">Requests served with the organization’s own key are logged with their cost but not debited from its credits. Keys are encrypted at rest and never shown again.</p>
      <Show value={keys}>
        {(k) => {
          const chosen = provider || k.providers[0] || '';
          return (
            <>
              <form class="card" aria-labelledby="set-key-title" onSubmit={(e) => {
                e.preventDefault();
                void act(() => put(`/orgs/${org.id}/provider-keys/${chosen}`, { key: secret.trim() }), `Saved the key for ${chosen}.`).then(() => setSecret(''));
              }}>
                <h2 id="set-key-title">Set or replace a key</h2>
                <div class="grid">
                  <Field label="Provider">
                    <select value={chosen} onChange={(e) => setProvider(e.currentTarget.value)}>{k.providers.map((p) => <option key={p} value={p}>{p}</option>)}</select>
                  </Field>
                  <Field label="API key"><input type="password" autoComplete="off" required value={secret} onInput={(e) => setSecret(e.currentTarget.value)} /></Field>
                </div>
                <div class="actions"><button type="submit">Save key</button></div>
              </form>
              <ErrorBox error={error} />
              {done ? <p role="status">{done}</p> : null}
              <table>
                <caption class="sr-only">Provider keys of {org.name}</caption>
                <thead><tr><th scope="col">Provider</th><th scope="col">Key</th><th scope="col">Updated</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {k.data.length === 0 ? <tr><td colSpan={4} class="muted">No keys of your own: the gateway’s keys are used and requests are debited.</td></tr> : null}
                  {k.data.map((x) => (
                    <tr key={x.provider}>
                      <td>{x.provider}</td><td><code>{x.masked}</code></td><td>{when(x.updated_at)}</td>
                      <td><button type="button" class="danger small" aria-label={`Remove the ${x.provider} key`} onClick={() => setRemoving(x.provider)}>Remove</button></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          );
        }}
      </Show>
      <Confirm open={removing !== undefined} title="Remove this provider key?" confirm="Remove key" onClose={() => setRemoving(undefined)}
        onConfirm={() => removing && void act(() => del(`/orgs/${org.id}/provider-keys/${removing}`), `Removed the key for ${removing}.`)}>
        <p>Requests to {removing} use the gateway’s key again, and are debited.</p>
      </Confirm>
    </Page>
  );
}
