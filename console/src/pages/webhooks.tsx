import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { del, get, post, type CreatedWebhook, type ListOf, type Webhook, type WebhookDelivery, type WebhookEvent } from '../api';
import type { PageProps } from '../app';
import { when } from '../format';
import { Link } from '../router';
import { Confirm, CopyButton, ErrorBox, Field, Page, Show, useAction, useLoad } from '../ui';

const EVENTS: Array<{ id: WebhookEvent; label: string }> = [
  { id: 'budget.threshold', label: 'Budget thresholds (50, 80, 100 %)' },
  { id: 'balance.below', label: 'Balance below the alert amount' },
];

/** The org's alert webhooks (docs/management.md, "Webhooks"): list, add (secret shown once), send a test event, remove; `rest[0]`: one webhook's deliveries. */
export function WebhooksPage({ org, rest }: PageProps): JSX.Element {
  return rest[0] ? <Deliveries orgId={org.id} webhookId={rest[0]} /> : <WebhookList org={org} />;
}

function WebhookList({ org }: Pick<PageProps, 'org'>): JSX.Element {
  const hooks = useLoad((signal) => get<ListOf<Webhook>>(`/orgs/${org.id}/webhooks`, undefined, signal), [org.id]);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEvent[]>(['budget.threshold', 'balance.below']);
  const [slack, setSlack] = useState(false);
  const [created, setCreated] = useState<CreatedWebhook | undefined>(undefined);
  const [removing, setRemoving] = useState<Webhook | undefined>(undefined);
  const { act, error, done } = useAction(() => hooks.reload());
  const toggle = (id: WebhookEvent, on: boolean): void => setEvents((list) => (on ? [...list, id] : list.filter((e) => e !== id)));
  return (
    <Page title="Webhooks">
      <p class="muted">Alerts are POSTed to these URLs, signed with each webhook’s secret (<code>x-tollgate-signature</code>), and retried until they are accepted.</p>
      {created ? (
        <div class="notice" role="status">
          <h2>New webhook for {created.url}</h2>
          <p>Copy its signing secret now: it is shown only this once and cannot be shown again.</p>
          <p><output class="secret" aria-label="Signing secret"><code>{created.secret}</code></output></p>
          <p><CopyButton text={created.secret} label="Copy secret" /> <button type="button" class="secondary" onClick={() => setCreated(undefined)}>Done</button></p>
        </div>
      ) : null}
      <form class="card" aria-labelledby="add-webhook-title" onSubmit={(e) => {
        e.preventDefault();
        void act(async () => {
          setCreated(await post<CreatedWebhook>(`/orgs/${org.id}/webhooks`, { url: url.trim(), events, slack }));
          setUrl('');
        }, 'Added the webhook.');
      }}>
        <h2 id="add-webhook-title">Add a webhook</h2>
        <div class="grid">
          <Field label="URL"><input type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://example.com/tollgate" /></Field>
        </div>
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label key={ev.id}><input type="checkbox" checked={events.includes(ev.id)} onChange={(e) => toggle(ev.id, e.currentTarget.checked)} /> {ev.label}</label>
          ))}
        </fieldset>
        <label><input type="checkbox" checked={slack} onChange={(e) => setSlack(e.currentTarget.checked)} /> Slack-compatible body</label>
        <div class="actions"><button type="submit" disabled={events.length === 0}>Add webhook</button></div>
      </form>
      <ErrorBox error={error} />
      {done ? <p role="status">{done}</p> : null}
      <Show value={hooks}>
        {(h) => (
          <table>
            <caption class="sr-only">Webhooks of {org.name}</caption>
            <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Added</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {h.data.length === 0 ? <tr><td colSpan={4} class="muted">No webhooks: alerts are not sent anywhere.</td></tr> : null}
              {h.data.map((w) => (
                <tr key={w.id}>
                  <td><Link to={`/orgs/${org.id}/webhooks/${w.id}`}>{w.url}</Link>{w.slack ? ' (Slack)' : ''}</td>
                  <td>{w.events.join(', ')}</td>
                  <td>{when(w.created_at)}</td>
                  <td>
                    <button type="button" class="secondary small" aria-label={`Send test event to ${w.url}`}
                      onClick={() => void act(() => post(`/orgs/${org.id}/webhooks/${w.id}/test`), `Test event queued for ${w.url}.`)}>Send test</button>{' '}
                    <button type="button" class="danger small" aria-label={`Remove the webhook ${w.url}`} onClick={() => setRemoving(w)}>Remove</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Show>
      <Confirm open={removing !== undefined} title="Remove this webhook?" confirm="Remove webhook" onClose={() => setRemoving(undefined)}
        onConfirm={() => removing && void act(() => del(`/orgs/${org.id}/webhooks/${removing.id}`), `Removed the webhook ${removing.url}.`)}>
        <p>Alerts stop going to {removing?.url}; its undelivered events are dropped.</p>
      </Confirm>
    </Page>
  );
}

/** One webhook's deliveries, newest first: status, attempts, the next try, the last answer. */
function Deliveries({ orgId, webhookId }: { orgId: string; webhookId: string }): JSX.Element {
  const list = useLoad((signal) => get<ListOf<WebhookDelivery>>(`/orgs/${orgId}/webhooks/${webhookId}/deliveries`, undefined, signal), [orgId, webhookId]);
  return (
    <Page title="Webhook deliveries" actions={<button type="button" class="secondary" onClick={list.reload}>Refresh</button>}>
      <p><Link to={`/orgs/${orgId}/webhooks`}>All webhooks</Link></p>
      <Show value={list}>
        {(d) => (
          <table>
            <caption class="sr-only">Deliveries of the webhook</caption>
            <thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Next try</th><th scope="col">Last answer</th><th scope="col">Created</th></tr></thead>
            <tbody>
              {d.data.length === 0 ? <tr><td colSpan={7} class="muted">Nothing sent yet.</td></tr> : null}
              {d.data.map((x) => (
                <tr key={x.id}>
                  <td><code>{x.event_id}</code></td><td>{x.type}</td>
                  <td><span class={`badge ${x.status === 'failed' ? 'bad' : x.status === 'delivered' ? 'good' : ''}`}>{x.status}</span></td>
                  <td>{x.attempts}</td><td>{x.next_attempt_at ? when(x.next_attempt_at) : '—'}</td>
                  <td>{x.last_status ?? ''}{x.last_error ? ` ${x.last_error}` : ''}</td><td>{when(x.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Show>
    </Page>
  );
}
