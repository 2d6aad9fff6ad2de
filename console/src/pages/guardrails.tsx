import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, get, patch, type BodyLogging, type GuardrailVerdict, type LogBodies, type ProjectDetail } from '../api';
import { int, when } from '../format';
import { EditDialog, Field, Show, useLoad, useSubmit } from '../ui';

/*
 * Guardrails and logged bodies (docs/guardrails.md): the project's settings on the Keys
 * page (admins edit them), and on a request's detail page its verdicts and its bodies,
 * the JSON highlighted and the placeholders of masked values marked.
 */

/** The project's guardrails and body logging; admins edit them (the guardrails as JSON, checked by the server). */
export function ProjectGuardrails({ orgId, projectId, admin, tick }: { orgId: string; projectId: string; admin: boolean; tick: number }): JSX.Element {
  const detail = useLoad((signal) => get<ProjectDetail>(`/orgs/${orgId}/projects/${projectId}`, undefined, signal), [orgId, projectId, tick]);
  const [editing, setEditing] = useState(false);
  return (
    <section class="card" aria-labelledby="project-guardrails-title">
      <div class="page-head">
        <h2 id="project-guardrails-title">Guardrails and body logging</h2>
        {admin && detail.data ? <button type="button" class="secondary small" onClick={() => setEditing(true)}>Edit guardrails</button> : null}
      </div>
      <Show value={detail}>
        {(p) => (
          <dl class="details">
            <dt>Guardrails</dt>
            <dd>
              {p.guardrails.length === 0 ? <span class="muted">none</span> : (
                <ol class="guardrails">{p.guardrails.map((g, i) => <li key={i}><code>{String(g.name ?? g.type)}</code> {describe(g)}</li>)}</ol>
              )}
            </dd>
            <dt>Body logging</dt>
            <dd>{p.body_logging.mode === 'off' ? <span class="muted">off</span> : `${p.body_logging.mode}, kept ${int(p.body_logging.retention_days)} days, at most ${int(p.body_logging.max_bytes)} bytes each`}</dd>
          </dl>
        )}
      </Show>
      {detail.data ? <EditGuardrails open={editing} path={`/orgs/${orgId}/projects/${projectId}`} project={detail.data} onClose={() => setEditing(false)} onSaved={detail.reload} /> : null}
    </section>
  );
}

/** One line for a guardrail: its type, action, stages. */
function describe(g: Record<string, unknown>): string {
  const parts = [String(g.type)];
  if (typeof g.action === 'string') parts.push(g.action);
  if (Array.isArray(g.entities)) parts.push(g.entities.join(', '));
  if (g.restore === true) parts.push('restored in replies');
  if (typeof g.limit === 'number') parts.push(`limit ${g.limit}`);
  if (typeof g.url === 'string') parts.push(g.url);
  parts.push(Array.isArray(g.stages) ? g.stages.join(' + ') : 'pre-upstream');
  return parts.join(' · ');
}

function EditGuardrails(props: { open: boolean; path: string; project: ProjectDetail; onClose: () => void; onSaved: () => void }): JSX.Element {
  const [text, setText] = useState('[]');
  const [logging, setLogging] = useState<BodyLogging>({ mode: 'off', retention_days: 30, max_bytes: 65536 });
  const submission = useSubmit();
  const { error } = submission;
  const fill = (): void => {
    setText(JSON.stringify(props.project.guardrails, null, 2));
    setLogging(props.project.body_logging);
  };
  const submit = (): void => {
    let guardrails: unknown;
    try {
      guardrails = JSON.parse(text);
    } catch (err) {
      submission.setError(new ApiError(400, 'invalid_request', `The guardrails are not JSON: ${(err as Error).message}`, 'guardrails'));
      return;
    }
    void submission.run(async () => {
      await patch(props.path, { guardrails, body_logging: logging });
      props.onSaved();
      props.onClose();
    });
  };
  const guardrailsError = error instanceof ApiError && error.param?.startsWith('guardrails') ? error.message : undefined;
  return (
    <EditDialog open={props.open} onOpen={fill} deps={[props.project]} submission={submission} title="Edit guardrails" save="Save guardrails" onSubmit={submit} onClose={props.onClose}
      note={<>A list run in order on every request of the project's keys (docs/guardrails.md), e.g. <code>[{'{"type": "pii", "action": "mask", "restore": true}'}]</code>. A change applies at once on every instance.</>}
      errorAtField={Boolean(guardrailsError)}>
      <Field label="Guardrails (JSON)" error={guardrailsError}>
        <textarea rows={10} spellcheck={false} class="code" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </Field>
      <div class="grid">
        <Field label="Body logging">
          <select value={logging.mode} onChange={(e) => setLogging({ ...logging, mode: e.currentTarget.value as BodyLogging['mode'] })}>
            <option value="off">off</option>
            <option value="on">on</option>
            <option value="redacted">redacted</option>
          </select>
        </Field>
        <Field label="Keep bodies (days)">
          <input type="number" min="1" max="3650" step="1" value={logging.retention_days} onInput={(e) => setLogging({ ...logging, retention_days: Number(e.currentTarget.value) })} />
        </Field>
        <Field label="At most (bytes per body)">
          <input type="number" min="256" step="1" value={logging.max_bytes} onInput={(e) => setLogging({ ...logging, max_bytes: Number(e.currentTarget.value) })} />
        </Field>
      </div>
    </EditDialog>
  );
}

/** What each guardrail decided about a request (never the matched values). */
export function Verdicts({ verdicts }: { verdicts: GuardrailVerdict[] }): JSX.Element | null {
  if (verdicts.length === 0) return null;
  return (
    <>
      <h2>Guardrails</h2>
      <div class="scroll">
        <table>
          <thead><tr><th scope="col">Guardrail</th><th scope="col">Stage</th><th scope="col">Verdict</th><th scope="col">Categories</th><th scope="col" class="num">Matches</th></tr></thead>
          <tbody>
            {verdicts.map((v, i) => (
              <tr key={i}><td><code>{v.guardrail}</code></td><td>{v.stage}</td><td class={`verdict-${v.action}`}>{v.action}</td><td>{v.categories.join(', ')}</td><td class="num">{int(v.count)}</td></tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The logged request and response bodies, highlighted. */
export function Bodies({ bodies }: { bodies: LogBodies | null }): JSX.Element {
  if (!bodies) return <><h2>Bodies</h2><p class="muted">No bodies kept for this request (the project does not log them, or their retention ended).</p></>;
  return (
    <>
      <h2>Bodies</h2>
      <p class="muted small">As the upstream got and sent them: masked values are their placeholders{bodies.truncated ? '; cut at the project\'s max_bytes' : ''}. Deleted {when(bodies.expires_at)}.</p>
      <h3>Request</h3>
      {bodies.request === null ? <p class="muted">None.</p> : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a body that scrolls takes keyboard focus (axe: scrollable-region-focusable)
        <pre class="prompt body" data-testid="request-body" role="document" tabIndex={0} aria-label="Request body">{highlight(pretty(bodies.request))}</pre>
      )}
      <h3>Response</h3>
      {bodies.response === null ? <p class="muted">None.</p> : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a body that scrolls takes keyboard focus (axe: scrollable-region-focusable)
        <pre class="prompt body" data-testid="response-body" role="document" tabIndex={0} aria-label="Response body">{highlight(pretty(bodies.response))}</pre>
      )}
    </>
  );
}

/** A JSON body indented; anything else (a stream's frames, a cut body) as it is. */
function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const TOKEN = /("(?:[^"\\]|\\.)*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(\[[A-Z][A-Z0-9_]*_\d+\])/g;

/** JSON syntax highlighting: keys, strings, numbers, literals, and the placeholders of masked values. */
function highlight(text: string): JSX.Element[] {
  const out: JSX.Element[] = [];
  let at = 0;
  let n = 0;
  for (const m of text.matchAll(TOKEN)) {
    const start = m.index;
    if (start > at) out.push(<span key={n++}>{text.slice(at, start)}</span>);
    if (m[1] !== undefined) {
      out.push(...stringParts(m[1], m[2] ? 'tok-key' : 'tok-str', () => n++));
      if (m[2]) out.push(<span key={n++}>{m[2]}</span>);
    } else if (m[3] !== undefined) out.push(<span key={n++} class="tok-lit">{m[3]}</span>);
    else if (m[4] !== undefined) out.push(<span key={n++} class="tok-num">{m[4]}</span>);
    else out.push(<mark key={n++} class="tok-mask">{m[5]}</mark>);
    at = start + m[0].length;
  }
  if (at < text.length) out.push(<span key={n++}>{text.slice(at)}</span>);
  return out;
}

/** A string token, with the placeholders inside it marked. */
function stringParts(s: string, cls: string, key: () => number): JSX.Element[] {
  const parts: JSX.Element[] = [];
  let at = 0;
  for (const m of s.matchAll(/\[[A-Z][A-Z0-9_]*_\d+\]/g)) {
    if (m.index > at) parts.push(<span key={key()} class={cls}>{s.slice(at, m.index)}</span>);
    parts.push(<mark key={key()} class="tok-mask">{m[0]}</mark>);
    at = m.index + m[0].length;
  }
  if (at < s.length) parts.push(<span key={key()} class={cls}>{s.slice(at)}</span>);
  return parts;
}
