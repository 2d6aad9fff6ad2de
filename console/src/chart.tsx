import type { ComponentChildren, JSX } from 'preact';
import { niceTicks } from './format';

/** Colours for series, distinguishable in light and dark themes. */
const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#64748b'];
const colourOf = (i: number): string => PALETTE[i % PALETTE.length] as string;

/** The drawing's size and margins, in SVG units: the value axis on the left, the days below. */
const W = 720, H = 200, LEFT = 64, BOTTOM = 24, TOP = 8;

export interface Series { name: string; values: number[] }

/** Round ticks from 0 up past `largest`, and where a value stands (its height, and its y from the top). */
function valueAxis(largest: number): { ticks: number[]; scale: number; y: (v: number) => number } {
  const ticks = niceTicks(largest);
  const max = ticks[ticks.length - 1] as number;
  const scale = max > 0 ? (H - BOTTOM - TOP) / max : 0;
  return { ticks, scale, y: (v) => H - BOTTOM - v * scale };
}

/**
 * What every chart has around its marks: the SVG, named for screen readers by `label` and
 * `summary`, a grid line and a label a tick, and the legend of the series' colours.
 */
function ChartFrame(props: {
  label: string; summary: string; ticks: number[]; y: (v: number) => number; format: (n: number) => string; series: Array<{ name: string }>; children: ComponentChildren;
}): JSX.Element {
  const { y } = props;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${props.label}: ${props.summary}`}>
        <title>{props.label}</title>
        {props.ticks.map((t) => (
          <g key={t}>
            <line x1={LEFT} x2={W} y1={y(t)} y2={y(t)} class="grid" />
            <text x={LEFT - 6} y={y(t) + 4} text-anchor="end" class="axis">{props.format(t)}</text>
          </g>
        ))}
        {props.children}
      </svg>
      <figcaption>
        <ul class="legend">
          {props.series.map((s, j) => <li key={s.name}><span class="swatch" style={{ background: colourOf(j) }} aria-hidden="true" />{s.name}</li>)}
        </ul>
      </figcaption>
    </figure>
  );
}

/**
 * A stacked bar chart per day, in SVG (no chart library): one bar per day, one colour per
 * series, the scale from the largest day. Described for screen readers by its label; the
 * numbers themselves are in the table beside it.
 */
export function StackedBars(props: { label: string; days: string[]; series: Series[]; format: (n: number) => string }): JSX.Element {
  const { days, series } = props;
  const totals = days.map((_, i) => series.reduce((a, s) => a + (s.values[i] ?? 0), 0));
  const largest = Math.max(...totals, 0);
  const { ticks, scale, y: top } = valueAxis(largest);
  const bw = days.length > 0 ? (W - LEFT) / days.length : 0;
  return (
    <ChartFrame label={props.label} summary={`${days.length} days, largest day ${props.format(largest)}`} ticks={ticks} y={top} format={props.format} series={series}>
      {days.map((day, i) => {
        let y = H - BOTTOM;
        return (
          <g key={day}>
            {series.map((s, j) => {
              const h = (s.values[i] ?? 0) * scale;
              y -= h;
              return h > 0 ? <rect key={s.name} x={LEFT + i * bw + 1} y={y} width={Math.max(bw - 2, 1)} height={h} fill={colourOf(j)}><title>{`${day} · ${s.name}: ${props.format(s.values[i] ?? 0)}`}</title></rect> : null;
            })}
            {dayLabel(day, i, days.length, LEFT + i * bw + bw / 2, H - 6)}
          </g>
        );
      })}
    </ChartFrame>
  );
}

/** A day's axis label: the first, the last and about four between (each a month-day). */
function dayLabel(day: string, i: number, n: number, x: number, y: number): JSX.Element | null {
  if (!(i === 0 || i === n - 1 || (i % Math.ceil(n / 4) === 0 && n - 1 - i >= Math.ceil(n / 8)))) return null;
  return <text x={x} y={y} text-anchor={i === n - 1 ? 'end' : i === 0 ? 'start' : 'middle'} class="axis">{day.slice(5)}</text>;
}

/**
 * Lines per day (e.g. p50 and p95 latency), in SVG: one polyline a series, a dot a day
 * with a value, round ticks from 0. Days without a value break nothing: the line skips them.
 */
export function Lines(props: { label: string; days: string[]; series: Array<{ name: string; values: Array<number | null> }>; format: (n: number) => string }): JSX.Element {
  const { days, series } = props;
  const { ticks, y } = valueAxis(Math.max(0, ...series.flatMap((s) => s.values.map((v) => v ?? 0))));
  const step = days.length > 1 ? (W - LEFT - 8) / (days.length - 1) : 0;
  const x = (i: number): number => LEFT + 4 + i * step;
  const summary = series.map((s) => `${s.name} up to ${props.format(Math.max(0, ...s.values.map((v) => v ?? 0)))}`).join(', ');
  return (
    <ChartFrame label={props.label} summary={summary} ticks={ticks} y={y} format={props.format} series={series}>
      {series.map((s, j) => (
        <g key={s.name}>
          <polyline fill="none" stroke={colourOf(j)} stroke-width="2"
            points={s.values.map((v, i) => (v === null ? null : `${x(i)},${y(v)}`)).filter((p) => p !== null).join(' ')} />
          {s.values.map((v, i) => (v === null ? null : <circle key={i} cx={x(i)} cy={y(v)} r="3" fill={colourOf(j)}><title>{`${days[i]} · ${s.name}: ${props.format(v)}`}</title></circle>))}
        </g>
      ))}
      {days.map((day, i) => <g key={day}>{dayLabel(day, i, days.length, x(i), H - 6)}</g>)}
    </ChartFrame>
  );
}
