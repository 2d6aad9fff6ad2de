import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { del, get, patch, post, type Invitation, type ListOf, type Member, type MemberAdded, type Role } from '../api';
import type { PageProps } from '../app';
import { when } from '../format';
import { Confirm, ErrorBox, Page, Show, useLoad, useSubmit, Field } from '../ui';

const ROLES: Role[] = ['member', 'admin', 'owner'];

/** Members and their roles; owners invite by email (operators add directly), change roles and remove; operators deactivate and reactivate users. */
export function MembersPage({ org, me }: PageProps): JSX.Element {
  const members = useLoad((signal) => get<ListOf<Member>>(`/orgs/${org.id}/members`, undefined, signal), [org.id]);
  const owner = org.role === 'owner' || org.role === 'operator';
  const invitations = useLoad((signal) => (owner ? get<ListOf<Invitation>>(`/orgs/${org.id}/invitations`, undefined, signal) : Promise.resolve({ data: [] })), [org.id, owner]);
  const [error, setError] = useState<unknown>(undefined);
  const [removing, setRemoving] = useState<Member | undefined>(undefined);
  const act = async (work: () => Promise<unknown>): Promise<void> => {
    setError(undefined);
    try {
      await work();
      members.reload();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <Page title="Members">
      {owner ? <AddMember orgId={org.id} operator={me.operator} onAdded={() => { members.reload(); invitations.reload(); }} /> : null}
      <ErrorBox error={error} />
      <Show value={members}>
        {(m) => (
          <div class="scroll">
            <table>
              <caption class="sr-only">Members of {org.name}</caption>
              <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th><th scope="col">Status</th>{owner ? <th scope="col"><span class="sr-only">Actions</span></th> : null}</tr></thead>
              <tbody>
                {m.data.length === 0 ? <tr><td colSpan={5} class="muted">{me.operator ? 'No members yet: you see this organization as an operator, without being one of its members. Add its first owner above.' : 'No members yet.'}</td></tr> : null}
                {m.data.map((x) => (
                  <MemberRow key={x.user_id} member={x} you={x.user_id === me.id} owner={owner} operator={me.operator}
                    onRole={(role) => void act(() => patch(`/orgs/${org.id}/members/${x.user_id}`, { role }))} onRemove={() => setRemoving(x)}
                    onActive={(active) => void act(() => patch(`/users/${x.user_id}`, { active }))} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Show>
      {owner ? (
        <Show value={invitations}>
          {(inv) => (inv.data.length === 0 ? null : (
            <div class="scroll">
              <table>
                <caption>Pending invitations</caption>
                <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {inv.data.map((i) => (
                    <tr key={i.id}>
                      <td>{i.email}</td><td>{i.role}</td><td>{when(i.expires_at)}</td>
                      <td><button type="button" class="small" aria-label={`Revoke the invitation of ${i.email}`}
                        onClick={() => void act(async () => { await del(`/orgs/${org.id}/invitations/${i.id}`); invitations.reload(); })}>Revoke</button></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ))}
        </Show>
      ) : null}
      <Confirm open={removing !== undefined} title="Remove this member?" confirm="Remove member" onClose={() => setRemoving(undefined)}
        onConfirm={() => removing && void act(() => del(`/orgs/${org.id}/members/${removing.user_id}`))}>
        <p>{removing?.email} loses access to {org.name} at once.</p>
      </Confirm>
    </Page>
  );
}

/** One member; a role is changed with its own button, so moving through the menu with the arrow keys changes nothing yet. */
function MemberRow(props: { member: Member; you: boolean; owner: boolean; operator: boolean; onRole: (role: Role) => void; onRemove: () => void; onActive: (active: boolean) => void }): JSX.Element {
  const { member: x, owner } = props;
  const [role, setRole] = useState<Role>(x.role);
  useEffect(() => setRole(x.role), [x.role]);
  return (
    <tr>
      <td>{x.email}{props.you ? ' (you)' : ''}</td>
      <td>
        {owner ? (
          <div class="actions">
            <select aria-label={`Role of ${x.email}`} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
            </select>
            {role !== x.role ? <button type="button" class="small" onClick={() => props.onRole(role)}>Change role</button> : null}
          </div>
        ) : x.role}
      </td>
      <td>{when(x.created_at)}</td>
      <td><span class={`badge ${x.active ? 'good' : 'bad'}`}>{x.active ? 'active' : 'deactivated'}</span></td>
      {owner ? (
        <td>
          <div class="actions">
            {props.operator && !props.you ? (
              <button type="button" class="secondary small" aria-label={`${x.active ? 'Deactivate' : 'Reactivate'} ${x.email}`} onClick={() => props.onActive(!x.active)}>
                {x.active ? 'Deactivate' : 'Reactivate'}
              </button>
            ) : null}
            <button type="button" class="danger small" aria-label={`Remove ${x.email}`} onClick={props.onRemove}>Remove</button>
          </div>
        </td>
      ) : null}
    </tr>
  );
}

/** An owner's add sends an invitation (the user joins when they accept); an operator's adds at once, or creates the user with a first password. */
function AddMember({ orgId, operator, onAdded }: { orgId: string; operator: boolean; onAdded: () => void }): JSX.Element {
  const [f, setF] = useState({ email: '', role: 'member', password: '' });
  const { error, run } = useSubmit();
  const [done, setDone] = useState('');
  const submit = (e: Event): void => {
    e.preventDefault();
    setDone('');
    void run(async () => {
      const r = await post<MemberAdded>(`/orgs/${orgId}/members`, { email: f.email.trim(), role: f.role, ...(operator && f.password ? { password: f.password } : {}) });
      if (r.member) setDone(`Added ${r.member.email} as ${r.member.role}.`);
      else if (r.invitation) setDone(`Invitation sent to ${r.invitation.email} as ${r.invitation.role}: they join when they accept it (until ${when(r.invitation.expires_at)}).`);
      setF({ email: '', role: 'member', password: '' });
      onAdded();
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="add-member-title">
      <h2 id="add-member-title">Add a member</h2>
      <div class="grid">
        <Field label="Email"><input type="email" required value={f.email} onInput={(e) => setF({ ...f, email: e.currentTarget.value })} /></Field>
        <Field label="Role">
          <select value={f.role} onChange={(e) => setF({ ...f, role: e.currentTarget.value })}>{ROLES.map((r) => <option key={r} value={r}>{r}</option>)}</select>
        </Field>
        {operator ? <Field label="First password (only for a new user)"><input type="password" autoComplete="new-password" value={f.password} onInput={(e) => setF({ ...f, password: e.currentTarget.value })} /></Field> : null}
      </div>
      <ErrorBox error={error} />
      {done ? <p role="status">{done}</p> : null}
      <div class="actions"><button type="submit">{operator ? 'Add member' : 'Send invitation'}</button></div>
    </form>
  );
}
