import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { get, post, type Deployments, type ReloadResult } from '../api';
import type { PageProps } from '../app';
import { when } from '../format';
import { ErrorBox, Page, Show, useLoad } from '../ui';

const STATE_LABEL: Record<string, string> = { healthy: 'healthy', cooling: 'cooling down', rejected: 'key refused' };

/**
 * Operators: every provider key (deployment) and its health on this instance, the routing
 * strategy, the model groups and the latest reload; a button re-reads gateway.yaml and
 * providers/ (POST /api/v1/reload). Keys themselves are never shown.
 */
export function DeploymentsPage(_props: PageProps): JSX.Element {
  const r = useLoad((signal) => get<Deployments>('/deployments', undefined, signal), []);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<ReloadResult | undefined>(undefined);
  const reload = async (): Promise<void> => {
    setError(undefined);
    try {
      setDone(await post<ReloadResult>('/reload'));
      r.reload();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <Page title="Deployments" actions={<button type="button" onClick={() => void reload()}>Reload configuration</button>}>
      <ErrorBox error={error} />
      {done ? <p role="status">Reloaded{done.restart_needed.length > 0 ? `; these settings take effect only after a restart: ${done.restart_needed.join(', ')}` : '.'}</p> : null}
      <Show value={r}>
        {(d) => (
          <>
            <p>Strategy <strong>{d.strategy}</strong>; a failing key rests {Math.round(d.cooldown_ms / 1000)} s unless the provider sends Retry-After.
              {d.last_reload ? ` Last reload ${when(d.last_reload.at)}: ${d.last_reload.result}.` : ''}</p>
            <div class="scroll">
              <table>
                <thead><tr>
                  <th scope="col">Provider</th><th scope="col">Key</th><th scope="col">Base URL</th><th scope="col" class="num">Weight</th>
                  <th scope="col" class="num">rpm</th><th scope="col" class="num">tpm</th><th scope="col">State</th><th scope="col" class="num">In flight</th><th scope="col" class="num">TTFB avg</th>
                </tr></thead>
                <tbody>
                  {d.data.map((x) => (
                    <tr key={`${x.provider}/${x.name}`}>
                      <td>{x.provider}</td><td>{x.name}</td><td><code>{x.base_url}</code></td><td class="num">{x.weight}</td>
                      <td class="num">{x.rpm ?? '—'}</td><td class="num">{x.tpm ?? '—'}</td>
                      <td>{STATE_LABEL[x.state] ?? x.state}{x.reason ? ` (${x.reason})` : ''}{x.cooling_until ? `, back ${when(x.cooling_until)}` : ''}</td>
                      <td class="num">{x.in_flight}</td><td class="num">{x.latency_ms === null ? '—' : `${Math.round(x.latency_ms)} ms`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <h2>Model groups</h2>
            {d.groups.length === 0 ? <p class="muted">None (gateway.yaml <code>models:</code>).</p> : (
              <ul>{d.groups.map((g) => <li key={g.name}><strong>{g.name}</strong>: {g.targets.join(', ')} ({g.strategy}){g.fallbacks.length ? `, then ${g.fallbacks.join(', ')}` : ''}</li>)}</ul>
            )}
          </>
        )}
      </Show>
    </Page>
  );
}
