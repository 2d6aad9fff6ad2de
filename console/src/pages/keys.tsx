import { cacheSummary, EditCache } from './cache';
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, get, patch, post, type ApiKey, type Limits, type ListOf, type ModelRecord, type Project } from '../api';
import type { PageProps } from '../app';
import { ago, fromUtcInput, when } from '../format';
import { navigate } from '../router';
import { Confirm, CopyButton, ErrorBox, Page, Show, useLoad, useSubmit, Field } from '../ui';
import { ProjectGuardrails } from './guardrails';
import { BudgetShortfall, BudgetSpend, createLimits, EditLimits, EMPTY_LIMITS, LimitFields, limitFieldOf, LimitsList, ProjectLimits, useFocusInvalid, type LimitsDraft } from './limits';

const canAdmin = (role: string): boolean => role !== 'member';

/**
 * API keys per project: create (shown once), revoke with confirmation, last use, limits and a budget's spend
 * (admins edit them), and the project's own limits.
 */
export function KeysPage({ org, loc }: PageProps): JSX.Element {
  const projects = useLoad((signal) => get<ListOf<Project>>(`/orgs/${org.id}/projects`, undefined, signal), [org.id]);
  const projectId = loc.query.get('project') ?? projects.data?.data[0]?.id;
  const keys = useLoad(
    (signal) => (projectId ? get<ListOf<ApiKey>>(`/orgs/${org.id}/projects/${projectId}/keys`, undefined, signal) : Promise.resolve({ data: [] })),
    [org.id, projectId],
  );
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<(ApiKey & { key: string; previous_expires_at?: string }) | undefined>(undefined);
  const [rotating, setRotating] = useState<ApiKey | undefined>(undefined);
  const [renaming, setRenaming] = useState<ApiKey | undefined>(undefined);
  const [revoking, setRevoking] = useState<ApiKey | undefined>(undefined);
  const [caching, setCaching] = useState<ApiKey | undefined>(undefined);
  const [editing, setEditing] = useState<{ key: ApiKey; limits: Limits } | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    setCreated(undefined);
    setCreating(false);
  }, [projectId]);
  const admin = canAdmin(org.role);
  const revoke = async (k: ApiKey): Promise<void> => {
    setError(undefined);
    try {
      await del(`/orgs/${org.id}/keys/${k.id}`);
      keys.reload();
      projects.reload();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <Page title="Keys" actions={admin && projectId ? <button type="button" onClick={() => setCreating(true)} aria-expanded={creating}>Create key</button> : null}>
      <Show value={projects}>
        {(p) => (
          <div class="toolbar">
            <Field label="Project">
              <select value={projectId} onChange={(e) => navigate(`/orgs/${org.id}/keys?project=${e.currentTarget.value}`)}>
                {p.data.map((x) => <option key={x.id} value={x.id}>{x.name} ({x.live_keys} live)</option>)}
              </select>
            </Field>
            {admin ? <NewProject orgId={org.id} onCreated={(id) => { projects.reload(); navigate(`/orgs/${org.id}/keys?project=${id}`); }} /> : null}
          </div>
        )}
      </Show>
      {created ? (
        <div class="notice" role="status">
          <h2>{created.previous_expires_at ? 'New secret of key' : 'New key'} “{created.name || created.prefix}”</h2>
          <p>Copy it now: it is shown only this once and cannot be shown again.</p>
          {created.previous_expires_at ? <p>The old secret is accepted until {when(created.previous_expires_at)}, then refused.</p> : null}
          <p><output class="secret" aria-label="New API key"><code>{created.key}</code></output></p>
          <p><CopyButton text={created.key} label="Copy key" /> <button type="button" class="secondary" onClick={() => setCreated(undefined)}>Done</button></p>
        </div>
      ) : null}
      {renaming ? (
        <RenameKey key={renaming.id} orgId={org.id} apiKey={renaming} onCancel={() => setRenaming(undefined)}
          onRenamed={() => { setRenaming(undefined); keys.reload(); }} />
      ) : null}
      {rotating ? (
        <RotateKey orgId={org.id} apiKey={rotating} onCancel={() => setRotating(undefined)}
          onRotated={(k) => { setRotating(undefined); setCreated(k); keys.reload(); }} />
      ) : null}
      {creating && projectId ? (
        <CreateKey orgId={org.id} projectId={projectId} onCancel={() => setCreating(false)}
          onCreated={(k) => { setCreating(false); setCreated(k); keys.reload(); projects.reload(); }} />
      ) : null}
      <ErrorBox error={error} />
      {projectId ? <ProjectLimits orgId={org.id} projectId={projectId} admin={admin} tick={tick} /> : null}
      {projectId ? <ProjectGuardrails orgId={org.id} projectId={projectId} admin={admin} tick={tick} /> : null}
      <Show value={keys}>
        {(k) => (
          <div class="scroll">
            <table>
              <caption class="sr-only">API keys of the project</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Created</th>
                  <th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Models</th><th scope="col">Limits</th><th scope="col">Cache</th><th scope="col">Budget spent</th>{admin ? <th scope="col"><span class="sr-only">Actions</span></th> : null}
                </tr>
              </thead>
              <tbody>
                {k.data.length === 0 ? <tr><td colSpan={11} class="muted">No keys in this project yet.</td></tr> : null}
                {k.data.map((x) => (
                  <tr key={x.id}>
                    <td>{x.name || '—'}</td>
                    <td><code>{x.prefix}…</code></td>
                    <td><span class={`badge ${x.status === 'active' ? 'good' : 'bad'}`}>{x.status}</span></td>
                    <td>{when(x.created_at)}</td>
                    <td>{x.expires_at ? when(x.expires_at) : 'never'}</td>
                    <td title={x.last_used_at ?? undefined}>{ago(x.last_used_at)}</td>
                    <td>{x.allowed_models ? x.allowed_models.join(', ') : 'all'}</td>
                    <td><LimitsList limits={x.limits} /></td>
                    <td>{cacheSummary(x.cache, 'as project')}</td>
                    <td>{x.limits.budget_usd !== null && x.status === 'active' ? <><BudgetSpend usage={x.usage} /><BudgetShortfall orgId={org.id} scope="key" id={x.id} tick={tick} /></> : <span class="muted">—</span>}</td>
                    {admin ? (
                      <td>
                        {x.status === 'active' ? (
                          <div class="actions">
                            <button type="button" class="secondary small" onClick={() => setRenaming(x)} aria-label={`Rename key ${x.name || x.prefix}`}>Rename</button>
                            <button type="button" class="secondary small" onClick={() => setEditing({ key: x, limits: x.limits })} aria-label={`Edit limits of key ${x.name || x.prefix}`}>Edit limits</button>
                            <button type="button" class="secondary small" onClick={() => setCaching(x)} aria-label={`Edit response cache of key ${x.name || x.prefix}`}>Cache</button>
                            <button type="button" class="secondary small" onClick={() => { setCreated(undefined); setRotating(x); }} aria-label={`Rotate key ${x.name || x.prefix}`}>Rotate</button>
                            <button type="button" class="danger small" onClick={() => setRevoking(x)} aria-label={`Revoke key ${x.name || x.prefix}`}>Revoke</button>
                          </div>
                        ) : null}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Show>
      <EditLimits title={`Edit limits of key “${editing?.key.name || editing?.key.prefix || ''}”`} path={`/orgs/${org.id}/keys/${editing?.key.id ?? ''}`}
        limits={editing?.limits} onClose={() => setEditing(undefined)} onSaved={() => { keys.reload(); setTick((t) => t + 1); }} />
      <EditCache title={`Response cache of key “${caching?.name || caching?.prefix || ''}”`} path={`/orgs/${org.id}/keys/${caching?.id ?? ''}`} value={caching?.cache}
        open={caching !== undefined} onClose={() => setCaching(undefined)} onSaved={() => keys.reload()} />
      <Confirm open={revoking !== undefined} title="Revoke this key?" confirm="Revoke key" onClose={() => setRevoking(undefined)}
        onConfirm={() => revoking && void revoke(revoking)}>
        <p>Requests with <code>{revoking?.prefix}…</code> ({revoking?.name || 'unnamed'}) are refused everywhere within a second. This cannot be undone.</p>
      </Confirm>
    </Page>
  );
}

function NewProject({ orgId, onCreated }: { orgId: string; onCreated: (id: string) => void }): JSX.Element {
  const [name, setName] = useState('');
  const { error, run } = useSubmit();
  const submit = (e: Event): void => {
    e.preventDefault();
    void run(async () => {
      const p = await post<Project>(`/orgs/${orgId}/projects`, { name: name.trim() });
      setName('');
      onCreated(p.id);
    });
  };
  return (
    <form class="inline" onSubmit={submit}>
      <Field label="New project"><input value={name} required onInput={(e) => setName(e.currentTarget.value)} /></Field>
      <button type="submit" class="secondary">Add project</button>
      <ErrorBox error={error} />
    </form>
  );
}

/** The create-key form: name, optional expiry, model allow-list, and limits (sent only when filled). */
function CreateKey(props: { orgId: string; projectId: string; onCreated: (k: ApiKey & { key: string }) => void; onCancel: () => void }): JSX.Element {
  const [f, setF] = useState({ name: '', expires: '', models: '' });
  const [limits, setLimits] = useState<LimitsDraft>(EMPTY_LIMITS);
  const { error, busy, run } = useSubmit();
  const form = useFocusInvalid(error);
  const set = (k: keyof typeof f) => (e: { currentTarget: HTMLInputElement }) => setF({ ...f, [k]: e.currentTarget.value });
  const param = error instanceof ApiError ? error.param ?? '' : '';
  const msg = (p: string): string | undefined => (param === p || param.startsWith(`${p}[`) ? (error as Error).message : undefined);
  const catalogue = useLoad((signal) => get<ListOf<ModelRecord>>(`/orgs/${props.orgId}/models`, undefined, signal), [props.orgId]);
  const examples = (catalogue.data?.data ?? []).filter((m) => m.modality === 'chat' && !m.deactivated_at).slice(0, 2).map((m) => m.id);
  const shownAtField = limitFieldOf(error) !== undefined || ['name', 'expires_at', 'allowed_models'].some((p) => msg(p) !== undefined);
  const submit = (e: Event): void => {
    e.preventDefault();
    const body: Record<string, unknown> = { name: f.name.trim() };
    if (f.expires) body.expires_at = fromUtcInput(f.expires);
    const models = f.models.split(/[\s,]+/).filter(Boolean);
    if (models.length > 0) body.allowed_models = models;
    const l = createLimits(limits);
    if (l) body.limits = l;
    void run(async () => props.onCreated(await post<ApiKey & { key: string }>(`/orgs/${props.orgId}/projects/${props.projectId}/keys`, body)));
  };
  return (
    <form ref={form} class="card" onSubmit={submit} aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create key</h2>
      <div class="grid">
        <Field label="Name" error={msg('name')}><input value={f.name} maxLength={100} onInput={set('name')} /></Field>
        <Field label="Expires (optional, UTC)" error={msg('expires_at')}><input type="datetime-local" value={f.expires} onInput={set('expires')} /></Field>
        <Field label="Allowed models (optional; comma-separated, empty: every model)" class="wide" error={msg('allowed_models')}><input value={f.models} placeholder={examples.length ? `e.g. ${examples.join(', ')}` : ''} onInput={set('models')} /></Field>
      </div>
      <fieldset>
        <legend>Limits (optional; empty: no limit)</legend>
        <LimitFields value={limits} onChange={setLimits} error={error} />
      </fieldset>
      {shownAtField ? null : <ErrorBox error={error} />}
      <div class="actions">
        <button type="submit" disabled={busy}>Create</button>
        <button type="button" class="secondary" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}

/** Rotation: a new secret for the same key; the old one keeps working for the grace period asked here (0 to 168 hours). */
function RotateKey(props: { orgId: string; apiKey: ApiKey; onRotated: (k: ApiKey & { key: string; previous_expires_at: string }) => void; onCancel: () => void }): JSX.Element {
  const [hours, setHours] = useState('24');
  const { error, busy, run } = useSubmit();
  const name = props.apiKey.name || props.apiKey.prefix;
  const submit = (e: Event): void => {
    e.preventDefault();
    void run(async () => {
      const grace = Math.round(Number(hours) * 3600);
      props.onRotated(await post<ApiKey & { key: string; previous_expires_at: string }>(`/orgs/${props.orgId}/keys/${props.apiKey.id}/rotate`, { grace_seconds: grace }));
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="rotate-key-title">
      <h2 id="rotate-key-title">Rotate key “{name}”</h2>
      <p>The key gets a new secret, with the same id, project, limits and usage.</p>
      <Field label="Old secret keeps working for (hours, 0 to 168)">
        <input type="number" min={0} max={168} step="any" required value={hours} onInput={(e) => setHours(e.currentTarget.value)} />
      </Field>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" disabled={busy}>Rotate key</button>
        <button type="button" class="secondary" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}

/** Renames a key: its label only, the key itself is unchanged (PATCH, audited). */
function RenameKey(props: { orgId: string; apiKey: ApiKey; onRenamed: () => void; onCancel: () => void }): JSX.Element {
  const [name, setName] = useState(props.apiKey.name);
  const { error, run } = useSubmit();
  const submit = (e: Event): void => {
    e.preventDefault();
    void run(async () => {
      await patch(`/orgs/${props.orgId}/keys/${props.apiKey.id}`, { name: name.trim() });
      props.onRenamed();
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="rename-key-title">
      <h2 id="rename-key-title">Rename key <code>{props.apiKey.prefix}…</code></h2>
      <Field label="New name" error={error instanceof ApiError && error.param === 'name' ? error.message : undefined}>
        <input value={name} maxLength={100} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      {error instanceof ApiError && error.param === 'name' ? null : <ErrorBox error={error} />}
      <div class="actions">
        <button type="submit">Save name</button>
        <button type="button" class="secondary" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}
