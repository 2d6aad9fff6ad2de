import type { JSX } from 'preact';
import { get, type AuditItem } from '../api';
import type { PageProps } from '../app';
import { useAddressFilters } from '../router';
import { Field, Page, Pager, Show, useLoad } from '../ui';

const FILTERS = ['action', 'actor'] as const;

/** Nested values as dotted paths (`limits.rpm`), so that a change shows the leaf that changed, not the whole object. */
function flatten(value: unknown, path: string, out: Map<string, unknown>): Map<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    // An empty object ({} limits) has no leaf: its fields appear as they are set.
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) flatten(v, path ? `${path}.${k}` : k, out);
  } else if (path) out.set(path, value);
  return out;
}

const show = (v: unknown): string => (v === undefined || v === null ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

/** Each changed field, before → after; a creation (nothing before) lists what was set. */
export function changes(r: Pick<AuditItem, 'before' | 'after'>): Array<{ field: string; before: string | null; after: string }> {
  const after = flatten(r.after ?? {}, '', new Map());
  if (!r.before) return [...after].map(([field, v]) => ({ field, before: null, after: show(v) }));
  const before = flatten(r.before, '', new Map());
  const fields = [...new Set([...before.keys(), ...after.keys()])];
  return fields.filter((f) => JSON.stringify(before.get(f)) !== JSON.stringify(after.get(f)))
    .map((field) => ({ field, before: show(before.get(field)), after: show(after.get(field)) }));
}

function who(a: AuditItem['actor']): string {
  if (a.type === 'cli') return 'command line';
  const name = a.email ?? a.user_id ?? 'unknown';
  return a.type === 'token' && a.token_id ? `${name} (token ${a.token_id})` : a.type === 'anonymous' ? `${name} (not signed in)` : name;
}

/** The org's audit log, newest first: who changed what, when, from where, each changed field before → after; filters in the address; cursor paging. */
export function AuditPage({ org, loc }: PageProps): JSX.Element {
  const { filters, cursor, draft, setDraft, apply, clear, pager } = useAddressFilters(FILTERS, `/orgs/${org.id}/audit`, loc, true);
  const page = useLoad(
    (signal) => get<{ data: AuditItem[]; next_cursor: string | null }>(`/orgs/${org.id}/audit`, { ...filters, cursor, limit: 50 }, signal),
    [org.id, loc.query.toString()],
  );
  return (
    <Page title="Audit">
      <p class="muted">Every change to this organization, by whom and from where. Nothing here can be edited or deleted.</p>
      <form class="filters" onSubmit={apply} aria-label="Filter the audit log">
        <Field label="Action"><input value={draft.action} placeholder="key.update_limits, or key." onInput={(e) => setDraft({ ...draft, action: e.currentTarget.value })} /></Field>
        <Field label="Actor"><input value={draft.actor} placeholder="email, usr_…, tok_… or cli" onInput={(e) => setDraft({ ...draft, actor: e.currentTarget.value })} /></Field>
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="secondary" onClick={clear}>Clear</button>
        </div>
      </form>
      <Show value={page}>
        {(p) => (
          <>
            <div class="scroll">
              <table class="audit">
                <caption class="sr-only">Changes, newest first</caption>
                <thead>
                  <tr><th scope="col">When (UTC)</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Change</th></tr>
                </thead>
                <tbody>
                  {p.data.length === 0 ? <tr><td colSpan={6} class="muted">No changes match.</td></tr> : null}
                  {p.data.map((r) => (
                    <tr key={r.id}>
                      <td class="nowrap">{r.at.slice(0, 19).replace('T', ' ')}</td>
                      <td>{who(r.actor)}</td>
                      <td><span title={r.user_agent ?? undefined}>{r.ip ?? '—'}</span></td>
                      <td><code>{r.action}</code></td>
                      <td>{r.target_type ?? ''} {r.target_id ? <code>{r.target_id}</code> : null}</td>
                      <td>
                        <ul class="changes">
                          {changes(r).map((c) => (
                            <li key={c.field}><code>{c.field}</code>: {c.before === null ? c.after : <>{c.before} → {c.after}</>}</li>
                          ))}
                        </ul>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager label="Pages of the audit log" next={p.next_cursor} {...pager} />
          </>
        )}
      </Show>
    </Page>
  );
}
