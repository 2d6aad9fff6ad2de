import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { get, post, type Org, type Overview } from '../api';
import type { PageProps } from '../app';
import { StackedBars } from '../chart';
import { int, pct, usd } from '../format';
import { Link, navigate } from '../router';
import { ErrorBox, Field, Page, Show, Stat, useLoad, useSubmit } from '../ui';

/** Balance, the last 7 and 30 days, error rate, top models and projects (GET …/overview, one request). */
export function OverviewPage({ org, me, onOrgChanged }: PageProps & { onOrgChanged: () => void }): JSX.Element {
  const o = useLoad((signal) => get<Overview>(`/orgs/${org.id}/overview`, undefined, signal), [org.id]);
  return (
    <Page title="Overview">
      <Show value={o}>
        {(d) => (
          <>
            <div class="stats">
              <Stat label="Balance" value={usd(d.balance_usd)} hint={org.name} />
              <Stat label="Spend, last 7 days" value={usd(d.last_7_days.cost_usd)} hint={`${int(d.last_7_days.requests)} requests`} />
              <Stat label="Spend, last 30 days" value={usd(d.last_30_days.cost_usd)} hint={`${int(d.last_30_days.requests)} requests`} />
              <Stat label="Failure rate, 30 days" value={pct(d.errors_30_days.failure_rate)}
                hint={`${int(d.errors_30_days.upstream)} upstream, ${int(d.errors_30_days.other)} other errors; limit refusals not counted`} />
              <Stat label="Limit refusals, 30 days" value={int(d.errors_30_days.limit_refusals)} hint="Rate limits, budgets and credits the gateway enforced" />
            </div>
            <h2>Spend per day, last 30 days</h2>
            <StackedBars label="Spend per day in USD" days={d.daily.map((x) => x.day)} series={[{ name: 'Cost (USD)', values: d.daily.map((x) => x.cost_usd) }]} format={(n) => usd(n)} />
            <div class="two">
              <Top title="Top models, 30 days" what="Model" rows={d.top_models.map((m) => ({ ...m, key: m.model ?? '-', name: m.model ?? '(none)' }))} />
              <Top title="Top projects, 30 days" what="Project" rows={d.top_projects.map((p) => ({ ...p, key: p.project_id ?? '-', name: p.project_name ?? '(no project)' }))} />
            </div>
            <p><Link to={`/orgs/${org.id}/usage`}>Usage by day, model and project</Link> · <Link to={`/orgs/${org.id}/logs`}>Request log</Link></p>
          </>
        )}
      </Show>
      {me.operator ? <CreateOrg onCreated={onOrgChanged} /> : null}
    </Page>
  );
}

/** A table of the most used models or projects: each one's requests and cost. */
function Top({ title, what, rows }: { title: string; what: string; rows: Array<{ key: string; name: string; requests: number; cost_usd: number }> }): JSX.Element {
  return (
    <div>
      <h2>{title}</h2>
      <table>
        <thead><tr><th scope="col">{what}</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Cost</th></tr></thead>
        <tbody>
          {rows.length === 0 ? <tr><td colSpan={3} class="muted">No requests yet.</td></tr> : null}
          {rows.map((r) => <tr key={r.key}><td>{r.name}</td><td class="num">{int(r.requests)}</td><td class="num">{usd(r.cost_usd)}</td></tr>)}
        </tbody>
      </table>
    </div>
  );
}

/** An operator's form for a new organization (with its default project and optional starting credits). */
function CreateOrg({ onCreated }: { onCreated: () => void }): JSX.Element {
  const [f, setF] = useState({ name: '', credits: '' });
  const { error, run } = useSubmit();
  const submit = (e: Event): void => {
    e.preventDefault();
    void run(async () => {
      const org = await post<Org>('/orgs', { name: f.name.trim(), ...(f.credits.trim() ? { credits_usd: f.credits.trim() } : {}) });
      setF({ name: '', credits: '' });
      onCreated();
      navigate(`/orgs/${org.id}/overview`);
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-label="New org">
      <h2>Create an organization</h2>
      <p class="muted small">As an operator. It starts with a project named default; add its owner on its Members page.</p>
      <div class="grid">
        <Field label="Name"><input value={f.name} required maxLength={100} onInput={(e) => setF({ ...f, name: e.currentTarget.value })} /></Field>
        <Field label="Starting credits, USD (optional)"><input value={f.credits} inputMode="decimal" placeholder="0.00" onInput={(e) => setF({ ...f, credits: e.currentTarget.value })} /></Field>
      </div>
      <ErrorBox error={error} />
      <div class="actions"><button type="submit">Create organization</button></div>
    </form>
  );
}
