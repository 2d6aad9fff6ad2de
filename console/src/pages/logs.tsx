import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, type ApiKey, type ListOf, type LogDetail, type LogItem, type Project } from '../api';
import type { PageProps } from '../app';
import { fromUtcInput, int, ms, usd, utcInput, when } from '../format';
import { Link, navigate, useAddressFilters } from '../router';
import { Bodies, Verdicts } from './guardrails';
import { Page, Pager, Show, Status, useLoad, Field } from '../ui';

const FILTERS = ['q', 'project', 'key', 'model', 'status', 'from', 'to'] as const;
/** How often the first page reloads while "Live" is on. */
const LIVE_MS = 3000;

/**
 * The request log, newest first: search and filters in the address (shareable), cursor
 * paging, export of what matches (CSV or JSON lines, streamed by the gateway), and "Live":
 * the first page reloads every few seconds, so new requests appear without a reload.
 */
export function LogsPage({ org, loc }: PageProps): JSX.Element {
  const { filters, cursor, draft, setDraft, apply, clear, pager } = useAddressFilters(FILTERS, `/orgs/${org.id}/logs`, loc);
  const [search, setSearch] = useState('');
  const [live, setLive] = useState(false);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!live || cursor) return undefined;
    const timer = setInterval(() => setTick((n) => n + 1), LIVE_MS);
    return () => clearInterval(timer);
  }, [live, cursor]);
  const projects = useLoad((signal) => get<ListOf<Project>>(`/orgs/${org.id}/projects`, undefined, signal), [org.id]);
  const keys = useLoad((signal) => get<ListOf<ApiKey>>(`/orgs/${org.id}/keys`, undefined, signal), [org.id]);
  const page = useLoad(
    (signal) => get<{ data: LogItem[]; next_cursor: string | null }>(`/orgs/${org.id}/logs`, { ...filters, cursor, limit: 50 }, signal),
    [org.id, loc.query.toString(), tick],
  );
  const exportQuery = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  const exportHref = (format: string): string => `/api/v1/orgs/${org.id}/logs/export?${new URLSearchParams([...exportQuery, ['format', format]]).toString()}`;
  const find = (e: Event): void => {
    e.preventDefault();
    const id = search.trim();
    if (id) navigate(`/orgs/${org.id}/logs/${encodeURIComponent(id)}`);
  };
  const setD = (k: (typeof FILTERS)[number]) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) => setDraft({ ...draft, [k]: e.currentTarget.value });
  return (
    <Page title="Logs">
      <search>
        <form class="search" onSubmit={find}>
          <Field label="Find a request by id"><input value={search} placeholder="req_…" onInput={(e) => setSearch(e.currentTarget.value)} /></Field>
          <button type="submit" class="secondary">Find</button>
        </form>
      </search>
      <form class="filters" onSubmit={apply} aria-label="Filter the log">
        <Field label="Search" class="wide-search"><input type="search" value={draft.q} placeholder="model, key name, error, req_…" onInput={setD('q')} /></Field>
        <Field label="Project">
          <select value={draft.project} onChange={setD('project')}>
            <option value="">All projects</option>
            {projects.data?.data.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </Field>
        <Field label="Key">
          <select value={draft.key} onChange={setD('key')}>
            <option value="">All keys</option>
            {keys.data?.data.filter((k) => !draft.project || k.project_id === draft.project)
              .map((k) => <option key={k.id} value={k.id}>{k.name ? `${k.name} (${k.prefix}…)` : `${k.prefix}…`}</option>)}
          </select>
        </Field>
        <Field label="Model"><input value={draft.model} placeholder="any" onInput={setD('model')} /></Field>
        <Field label="Status">
          <select value={['', 'ok', 'error'].includes(draft.status) ? draft.status : 'code'} onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value === 'code' ? '400' : e.currentTarget.value })}>
            <option value="">Any</option><option value="ok">OK (&lt; 400)</option><option value="error">Errors (≥ 400)</option><option value="code">One status code</option>
          </select>
        </Field>
        {['', 'ok', 'error'].includes(draft.status) ? null : (
          <Field label="Status code"><input type="number" min="100" max="599" value={draft.status} onInput={setD('status')} /></Field>
        )}
        <Field label="From (UTC)"><input type="datetime-local" value={utcInput(draft.from)} onInput={(e) => setDraft({ ...draft, from: fromUtcInput(e.currentTarget.value) })} /></Field>
        <Field label="To (UTC)"><input type="datetime-local" value={utcInput(draft.to)} onInput={(e) => setDraft({ ...draft, to: fromUtcInput(e.currentTarget.value) })} /></Field>
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="secondary" onClick={clear}>Clear</button>
        </div>
      </form>
      <div class="toolbar">
        <label class="live"><input type="checkbox" checked={live} onChange={(e) => setLive(e.currentTarget.checked)} /> Live: show new requests as they arrive</label>
        <span>Export what matches: <a href={exportHref('csv')} download>CSV</a> · <a href={exportHref('jsonl')} download>JSON lines</a></span>
      </div>
      <Show value={page}>
        {(p) => (
          <>
            <p class="scroll-hint muted small" aria-hidden="true">Scroll the table sideways for every column →</p>
            {/* biome-ignore lint/a11y/noNoninteractiveTabindex: the table scrolls sideways, so its region takes keyboard focus (axe: scrollable-region-focusable) */}
            <section class="scroll" tabIndex={0} aria-label="Requests (scrolls sideways)">
              <table class="logs">
                <caption class="sr-only">Requests, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Model</th>
                    <th scope="col">Project</th><th scope="col">Key</th><th scope="col" class="num">Tokens in / out</th>
                    <th scope="col" class="num">Cost</th><th scope="col" class="num">Latency</th>
                  </tr>
                </thead>
                <tbody>
                  {p.data.length === 0 ? <tr><td colSpan={9} class="muted">No requests match.</td></tr> : null}
                  {p.data.map((r) => (
                    <tr key={r.id}>
                      <td class="nowrap">{when(r.created_at)}</td>
                      <td><Link to={`/orgs/${org.id}/logs/${r.id}`}><code>{r.id}</code></Link></td>
                      <td><Status code={r.status} />{r.error_code ? <span class="muted small"> {r.error_code}</span> : null}</td>
                      <td>{r.model ?? '—'}</td>
                      <td>{r.project_name ?? '—'}</td>
                      <td>{r.key_prefix ? <><code>{r.key_prefix}…</code>{r.key_name ? <div class="small">{r.key_name}</div> : null}</> : '—'}</td>
                      <td class="num">{r.prompt_tokens === null ? '—' : int(r.prompt_tokens)} / {r.completion_tokens === null ? '—' : int(r.completion_tokens)}</td>
                      <td class="num">{usd(r.cost_usd)}{r.byok ? ' (own key)' : ''}</td>
                      <td class="num">{ms(r.duration_ms)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
            <Pager label="Pages of the log" next={p.next_cursor} {...pager} />
          </>
        )}
      </Show>
    </Page>
  );
}

/** One request: tokens, cost, latency, TTFB, provider, error, attempts, and the prompt where kept. */
export function LogDetailPage({ org, id }: PageProps & { id: string }): JSX.Element {
  const r = useLoad((signal) => get<LogDetail>(`/orgs/${org.id}/logs/${encodeURIComponent(id)}`, undefined, signal), [org.id, id]);
  return (
    <Page title={`Request ${id}`}>
      <p><Link to={`/orgs/${org.id}/logs`}>← All requests</Link></p>
      <Show value={r}>
        {(d) => (
          <>
            <dl class="details">
              <dt>Time</dt><dd>{when(d.created_at)}</dd>
              <dt>Status</dt><dd><Status code={d.status} /></dd>
              <dt>Error</dt><dd>{d.error_code ?? 'none'}</dd>
              <dt>Model requested</dt><dd>{d.model ?? '—'}</dd>
              <dt>Model used</dt><dd>{d.used_model ?? '—'}</dd>
              <dt>Provider</dt><dd>{d.provider ?? '—'}</dd>
              <dt>Deployment</dt><dd>{d.deployment ?? (d.byok ? 'organization’s own key' : '—')}</dd>
              <dt>Kind</dt><dd>{d.modality}</dd>
              <dt>Project</dt><dd>{d.project_name ?? '—'}</dd>
              <dt>Key</dt><dd>{d.key_prefix ? <code>{d.key_prefix}…</code> : '—'} {d.key_name ?? ''}</dd>
              <dt>Prompt tokens</dt><dd>{d.prompt_tokens === null ? '—' : int(d.prompt_tokens)}</dd>
              <dt>Completion tokens</dt><dd>{d.completion_tokens === null ? '—' : int(d.completion_tokens)}</dd>
              <dt>Cost</dt><dd data-testid="cost">{usd(d.cost_usd)}{d.cost_estimated ? ' (estimated)' : ''}{d.byok ? ' (organization’s own provider key: not debited)' : ''}</dd>
              <dt>Latency</dt><dd>{ms(d.duration_ms)}</dd>
              <dt>Time to first byte</dt><dd>{ms(d.ttfb_ms)}</dd>
              <dt>Provider cache tokens</dt><dd data-testid="cache-tokens">{cacheTokens(d.extra)}</dd>
              <dt>Response cache</dt><dd data-testid="response-cache">{d.cache === null ? 'off' : d.cache}{d.cache === 'hit' ? ` (stored ${ms(d.cache_age_ms)} before; saved ${usd(d.saved_usd ?? 0)})` : ''}</dd>
            </dl>
            <h2>Upstream attempts</h2>
            <div class="scroll">
              <table>
                <thead><tr><th scope="col">#</th><th scope="col">Provider</th><th scope="col">Deployment</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col" class="num">Duration</th></tr></thead>
                <tbody>
                  {d.attempts.length === 0 ? <tr><td colSpan={7} class="muted">No upstream call (refused by the gateway).</td></tr> : null}
                  {d.attempts.map((a, i) => <tr key={i}><td>{i + 1}</td><td>{a.provider}</td><td>{a.deployment ?? '—'}</td><td>{a.model}</td><td>{a.status ?? '—'}</td><td>{a.error ?? ''}</td><td class="num">{ms(a.duration_ms)}</td></tr>)}
                </tbody>
              </table>
            </div>
            <h2>Response</h2>
            <p class="muted" data-testid="response-note">The request log does not keep the reply text. What it keeps of the response:</p>
            <ul class="response-kept">
              <li>Status {d.status}{d.error_code ? `, error ${d.error_code}` : ''}</li>
              <li>{d.completion_tokens === null ? 'No output tokens counted' : `${int(d.completion_tokens)} output tokens`}, cost {usd(d.cost_usd)}</li>
              <li>Upstream error: {d.attempts.map((a) => a.error).filter(Boolean).join('; ') || 'none'}</li>
            </ul>
            <h2>Prompt</h2>
            {d.prompt_retained ? (d.prompt ? <pre class="prompt">{d.prompt}</pre> : <p class="muted">No prompt text kept for this request.</p>)
              : <p class="muted">This organization keeps no prompt text (retention: none).</p>}
            <Verdicts verdicts={d.guardrails} />
            <Bodies bodies={d.bodies} />
            {d.extra ? <><h2>Details</h2><pre class="prompt">{JSON.stringify(d.extra, null, 2)}</pre></> : null}
          </>
        )}
      </Show>
    </Page>
  );
}

/** The provider's prompt-cache tokens of a request (docs/cache.md): read from and written to its cache, as billed. */
function cacheTokens(extra: Record<string, unknown> | null): string {
  const u = (extra?.usage ?? {}) as { cached_tokens?: number; cache_write_tokens?: number };
  if (!u.cached_tokens && !u.cache_write_tokens) return 'none';
  return `${int(u.cached_tokens ?? 0)} read, ${int(u.cache_write_tokens ?? 0)} written`;
}
