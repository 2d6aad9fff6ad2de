import type { JSX } from 'preact';
import { get, type Bucket, type Usage } from '../api';
import type { PageProps } from '../app';
import { useEffect, useState } from 'preact/hooks';
import type { Latency } from '../api';
import { Lines, StackedBars, type Series } from '../chart';
import { int, ms, pct, usd } from '../format';
import type { Loaded } from '../ui';
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

type By = 'model' | 'project' | 'key' | 'user';
const BY: Record<By, string> = { model: 'Model', project: 'Project', key: 'Key', user: 'User' };

/** A bucket's name in the chosen grouping. */
function labelOf(by: By, b: Bucket): string {
  if (by === 'model') return b.model ?? '(none)';
  if (by === 'project') return b.project_name ?? '(no project)';
  if (by === 'key') return b.key_id ? `${b.key_name || '(unnamed)'} · ${b.key_prefix ?? ''}…` : '(no key)';
  return b.user_id ? b.user_email ?? b.user_id : '(keys made outside the console)';
}

const dayText = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * Cost and requests per UTC day by model, project, key or user (the keys' creator), over
 * the last 7, 30 or 90 days or a custom range of days; p50/p95 latency and time to first
 * byte per day. Totals equal the log.
 */
export function UsagePage({ org, loc }: PageProps): JSX.Element {
  const q = loc.query;
  const by: By = (['project', 'key', 'user'] as const).find((b) => b === q.get('by')) ?? 'model';
  const custom = /^\d{4}-\d\d-\d\d$/.test(q.get('from') ?? '') && /^\d{4}-\d\d-\d\d$/.test(q.get('to') ?? '');
  const range = custom ? 0 : Number(q.get('days')) || 30;
  const today = Math.floor(Date.now() / DAY) * DAY;
  const fromDay = custom ? (q.get('from') as string) : dayText(today - (range - 1) * DAY);
  const toDay = custom ? (q.get('to') as string) : dayText(today);
  const [draft, setDraft] = useState({ from: fromDay, to: toDay });
  useEffect(() => setDraft({ from: fromDay, to: toDay }), [fromDay, toDay]);
  const go = (next: { by?: By; days?: number; from?: string; to?: string }): void => {
    const p = new URLSearchParams({ by: next.by ?? by });
    if (next.from && next.to) {
      p.set('from', next.from);
      p.set('to', next.to);
    } else p.set('days', String(next.days ?? (range || 30)));
    navigate(`/orgs/${org.id}/usage?${p.toString()}`);
  };
  const keep = (b: By): void => (custom ? go({ by: b, from: fromDay, to: toDay }) : go({ by: b, days: range }));
  // The range is whole UTC days, the last one included: [from 00:00, to + 1 day 00:00).
  const fromIso = `${fromDay}T00:00:00.000Z`;
  const toIso = new Date(Date.parse(`${toDay}T00:00:00.000Z`) + DAY).toISOString();
  const usage = useLoad((signal) => get<Usage>(`/orgs/${org.id}/usage`, { group_by: `day,${by}`, from: fromIso, to: toIso }, signal), [org.id, by, fromIso, toIso]);
  const latency = useLoad((signal) => get<Latency>(`/orgs/${org.id}/latency`, { from: fromIso, to: toIso }, signal), [org.id, fromIso, toIso]);
  const label = (b: Bucket): string => labelOf(by, b);
  const name = BY[by].toLowerCase();
  return (
    <Page title="Usage">
      <div class="toolbar">
        <Field label="Group by">
          <select value={by} onChange={(e) => keep(e.currentTarget.value as By)}>
            {(Object.keys(BY) as By[]).map((b) => <option key={b} value={b}>{BY[b]}</option>)}
          </select>
        </Field>
        <Field label="Range">
          <select value={custom ? 'custom' : String(range)} onChange={(e) => (e.currentTarget.value === 'custom' ? go({ from: fromDay, to: toDay }) : go({ days: Number(e.currentTarget.value) }))}>
            {RANGES.map((r) => <option key={r} value={String(r)}>Last {r} days</option>)}
            <option value="custom">Custom dates</option>
          </select>
        </Field>
        {custom ? (
          <form class="inline" aria-label="Custom range" onSubmit={(e) => { e.preventDefault(); if (draft.from && draft.to && draft.from <= draft.to) go({ from: draft.from, to: draft.to }); }}>
            <Field label="From day (UTC)"><input type="date" value={draft.from} max={draft.to} required onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })} /></Field>
            <Field label="To day (UTC, included)"><input type="date" value={draft.to} min={draft.from} required onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })} /></Field>
            <button type="submit">Show</button>
          </form>
        ) : null}
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
              <h2>Cost per day by {name}</h2>
              <StackedBars label={`Cost per day by ${name}, USD`} days={days} series={seriesOf(u, days, label, (b) => b.cost_usd)} format={(n) => usd(n)} />
              <h2>Requests per day by {name}</h2>
              <StackedBars label={`Requests per day by ${name}`} days={days} series={seriesOf(u, days, label, (b) => b.requests)} format={(n) => int(Math.round(n))} />
              <h2>By {name}</h2>
              <div class="scroll">
                <table>
                  <thead>
                    <tr><th scope="col">{BY[by]}</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Errors</th><th scope="col" class="num">Tokens in</th><th scope="col" class="num">Tokens out</th><th scope="col" class="num">Cost</th></tr>
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
              <LatencyCharts value={latency} days={days} />
              <p class="muted small">Days are UTC. Totals are summed by the gateway over exact micro-dollar amounts, so they equal the request log and the ledger.</p>
            </>
          );
        }}
      </Show>
    </Page>
  );
}

/** p50 and p95 of latency and of time to first byte per day, and over the range. */
function LatencyCharts({ value, days }: { value: Loaded<Latency>; days: string[] }): JSX.Element {
  return (
    <Show value={value}>
      {(l) => {
        const at = new Map(l.data.map((d) => [d.day, d]));
        const line = (pick: (d: Latency['data'][number]) => number | null) => days.map((day) => { const d = at.get(day); return d ? pick(d) : null; });
        return (
          <>
            <h2>Latency</h2>
            <div class="stats">
              <div class="stat"><div class="stat-label">Latency p50</div><div class="stat-value">{ms(l.latency.p50)}</div></div>
              <div class="stat"><div class="stat-label">Latency p95</div><div class="stat-value" data-testid="latency-p95">{ms(l.latency.p95)}</div></div>
              <div class="stat"><div class="stat-label">Time to first byte p50</div><div class="stat-value">{ms(l.ttfb.p50)}</div></div>
              <div class="stat"><div class="stat-label">Time to first byte p95</div><div class="stat-value">{ms(l.ttfb.p95)}</div></div>
            </div>
            <Lines label="Latency per day, ms" days={days} format={(n) => ms(n)}
              series={[{ name: 'p50', values: line((d) => d.latency.p50) }, { name: 'p95', values: line((d) => d.latency.p95) }]} />
            <Lines label="Time to first byte per day, ms" days={days} format={(n) => ms(n)}
              series={[{ name: 'p50', values: line((d) => d.ttfb.p50) }, { name: 'p95', values: line((d) => d.ttfb.p95) }]} />
            <p class="muted small">Percentiles to two significant digits (1,234 ms reads 1,200 ms), over {int(l.latency.count)} requests{l.sampled ? ', a sample of every hour of the range (it holds over 50,000)' : ''}.</p>
          </>
        );
      }}
    </Show>
  );
}
