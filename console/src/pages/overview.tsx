import type { JSX } from 'preact';
import { get, type Overview } from '../api';
import type { PageProps } from '../app';
import { StackedBars } from '../chart';
import { int, pct, usd } from '../format';
import { Link } from '../router';
import { Page, Show, Stat, useLoad } from '../ui';

/** Balance, the last 7 and 30 days, error rate, top models and projects (GET …/overview, one request). */
export function OverviewPage({ org }: PageProps): JSX.Element {
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
              <Stat label="Error rate, 30 days" value={pct(d.last_30_days.error_rate)} hint={`${int(d.last_30_days.errors)} errors; 7 days: ${pct(d.last_7_days.error_rate)}`} />
            </div>
            <h2>Spend per day, last 30 days</h2>
            <StackedBars label="Spend per day in USD" days={d.daily.map((x) => x.day)} series={[{ name: 'Cost (USD)', values: d.daily.map((x) => x.cost_usd) }]} format={(n) => usd(n)} />
            <div class="two">
              <div>
                <h2>Top models, 30 days</h2>
                <table>
                  <thead><tr><th scope="col">Model</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Cost</th></tr></thead>
                  <tbody>
                    {d.top_models.length === 0 ? <tr><td colSpan={3} class="muted">No requests yet.</td></tr> : null}
                    {d.top_models.map((m) => <tr key={m.model ?? '-'}><td>{m.model ?? '(none)'}</td><td class="num">{int(m.requests)}</td><td class="num">{usd(m.cost_usd)}</td></tr>)}
                  </tbody>
                </table>
              </div>
              <div>
                <h2>Top projects, 30 days</h2>
                <table>
                  <thead><tr><th scope="col">Project</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Cost</th></tr></thead>
                  <tbody>
                    {d.top_projects.length === 0 ? <tr><td colSpan={3} class="muted">No requests yet.</td></tr> : null}
                    {d.top_projects.map((p) => <tr key={p.project_id ?? '-'}><td>{p.project_name ?? '(no project)'}</td><td class="num">{int(p.requests)}</td><td class="num">{usd(p.cost_usd)}</td></tr>)}
                  </tbody>
                </table>
              </div>
            </div>
            <p><Link to={`/orgs/${org.id}/usage`}>Usage by day, model and project</Link> · <Link to={`/orgs/${org.id}/logs`}>Request log</Link></p>
          </>
        )}
      </Show>
    </Page>
  );
}
