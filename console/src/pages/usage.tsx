import type { JSX } from 'preact';
import { get, type Bucket, type Usage } from '../api';
import type { PageProps } from '../app';
import { StackedBars, type Series } from '../chart';
import { int, pct, usd } from '../format';
import { navigate } from '../router';
import { Page, Show, useLoad, Field } from '../ui';

const DAY = 86_400_000;
const RANGES = [7, 30, 90] as const;

/** Every UTC day from `from` to `to` (exclusive), so days without traffic show as empty bars. */
function daysOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Math.floor(Date.parse(from) / DAY) * DAY; t < Date.parse(to); t += DAY) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/**
 * Per-day series of one measure, one series per model or project: the five largest by cost
 * (then requests), the rest as "other". Both charts rank the same way, so a model keeps its
 * colour and legend place from one chart to the next.
 */
function seriesOf(u: Usage, days: string[], name: (b: Bucket) => string, measure: (b: Bucket) => number): Series[] {
  const rank = new Map<string, [number, number]>();
  for (const b of u.data) {
    const r = rank.get(name(b)) ?? [0, 0];
    rank.set(name(b), [r[0] + b.cost_usd, r[1] + b.requests]);
  }
  const names = [...rank].sort((a, b) => b[1][0] - a[1][0] || b[1][1] - a[1][1] || a[0].localeCompare(b[0])).map(([n]) => n);
  const top = names.slice(0, 5);
  const index = new Map(days.map((d, i) => [d, i]));
  const series = new Map<string, number[]>([...top, ...(names.length > 5 ? ['other'] : [])].map((n) => [n, days.map(() => 0)]));
  for (const b of u.data) {
    const s = series.get(top.includes(name(b)) ? name(b) : 'other');
    const i = index.get(b.day ?? '');
    if (s && i !== undefined) s[i] = (s[i] ?? 0) + measure(b);
  }
  return [...series].map(([n, values]) => ({ name: n, values }));
}

/** Cost and requests per day by model or project, with totals that equal the log. */
export function UsagePage({ org, loc }: PageProps): JSX.Element {
  const by = loc.query.get('by') === 'project' ? 'project' : 'model';
  const range = Number(loc.query.get('days')) || 30;
  const set = (b: string, d: number): void => navigate(`/orgs/${org.id}/usage?by=${b}&days=${d}`);
  const usage = useLoad((signal) => {
    const to = new Date(Math.floor(Date.now() / DAY) * DAY + DAY);
    const from = new Date(to.getTime() - range * DAY);
    return get<Usage>(`/orgs/${org.id}/usage`, { group_by: `day,${by}`, from: from.toISOString(), to: to.toISOString() }, signal);
  }, [org.id, by, range]);
  const label = (b: Bucket): string => (by === 'model' ? b.model ?? '(none)' : b.project_name ?? '(no project)');
  return (
    <Page title="Usage">
      <div class="toolbar">
        <Field label="Group by">
          <select value={by} onChange={(e) => set(e.currentTarget.value, range)}>
            <option value="model">Model</option><option value="project">Project</option>
          </select>
        </Field>
        <Field label="Range">
          <select value={String(range)} onChange={(e) => set(by, Number(e.currentTarget.value))}>
            {RANGES.map((r) => <option key={r} value={String(r)}>Last {r} days</option>)}
          </select>
        </Field>
      </div>
      <Show value={usage}>
        {(u) => {
          const days = daysOf(u.from, u.to);
          const rows = new Map<string, { requests: number; errors: number; cost: number; pt: number; ct: number }>();
          for (const b of u.data) {
            const r = rows.get(label(b)) ?? { requests: 0, errors: 0, cost: 0, pt: 0, ct: 0 };
            rows.set(label(b), { requests: r.requests + b.requests, errors: r.errors + b.errors, cost: r.cost + b.cost_usd, pt: r.pt + b.prompt_tokens, ct: r.ct + b.completion_tokens });
          }
          return (
            <>
              <div class="stats">
                <div class="stat"><div class="stat-label">Cost</div><div class="stat-value" data-testid="usage-cost">{usd(u.totals.cost_usd)}</div></div>
                <div class="stat"><div class="stat-label">Requests</div><div class="stat-value">{int(u.totals.requests)}</div></div>
                <div class="stat"><div class="stat-label">Error rate</div><div class="stat-value">{pct(u.totals.error_rate)}</div></div>
                <div class="stat"><div class="stat-label">Tokens in / out</div><div class="stat-value">{int(u.totals.prompt_tokens)} / {int(u.totals.completion_tokens)}</div></div>
              </div>
              <h2>Cost per day by {by}</h2>
              <StackedBars label={`Cost per day by ${by}, USD`} days={days} series={seriesOf(u, days, label, (b) => b.cost_usd)} format={(n) => usd(n)} />
              <h2>Requests per day by {by}</h2>
              <StackedBars label={`Requests per day by ${by}`} days={days} series={seriesOf(u, days, label, (b) => b.requests)} format={(n) => int(Math.round(n))} />
              <h2>By {by}</h2>
              <div class="scroll">
                <table>
                  <thead>
                    <tr><th scope="col">{by === 'model' ? 'Model' : 'Project'}</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Errors</th><th scope="col" class="num">Tokens in</th><th scope="col" class="num">Tokens out</th><th scope="col" class="num">Cost</th></tr>
                  </thead>
                  <tbody>
                    {[...rows].sort((a, b) => b[1].cost - a[1].cost).map(([n, r]) => (
                      <tr key={n}><td>{n}</td><td class="num">{int(r.requests)}</td><td class="num">{int(r.errors)}</td><td class="num">{int(r.pt)}</td><td class="num">{int(r.ct)}</td><td class="num">{usd(r.cost)}</td></tr>
                    ))}
                  </tbody>
                  <tfoot>
                    <tr><th scope="row">Total</th><td class="num">{int(u.totals.requests)}</td><td class="num">{int(u.totals.errors)}</td><td class="num">{int(u.totals.prompt_tokens)}</td><td class="num">{int(u.totals.completion_tokens)}</td><td class="num">{usd(u.totals.cost_usd)}</td></tr>
                  </tfoot>
                </table>
              </div>
              <p class="muted small">Days are UTC. Totals are summed by the gateway over exact micro-dollar amounts, so they equal the request log and the ledger.</p>
            </>
          );
        }}
      </Show>
    </Page>
  );
}
