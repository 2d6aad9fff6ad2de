import type { JSX } from 'preact';

/** Colours for series, distinguishable in light and dark themes. */
const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#64748b'];
export const colourOf = (i: number): string => PALETTE[i % PALETTE.length] as string;

export interface Series { name: string; values: number[] }

/**
 * A stacked bar chart per day, in SVG (no chart library): one bar per day, one colour per
 * series, the scale from the largest day. Described for screen readers by its label; the
 * numbers themselves are in the table beside it.
 */
export function StackedBars(props: { label: string; days: string[]; series: Series[]; format: (n: number) => string }): JSX.Element {
  const { days, series } = props;
  const W = 720, H = 200, left = 64, bottom = 24, top = 8;
  const totals = days.map((_, i) => series.reduce((a, s) => a + (s.values[i] ?? 0), 0));
  const max = Math.max(...totals, 0);
  const scale = max > 0 ? (H - bottom - top) / max : 0;
  const bw = days.length > 0 ? (W - left) / days.length : 0;
  const ticks = max > 0 ? [0, max / 2, max] : [0];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${props.label}: ${days.length} days, largest day ${props.format(max)}`}>
        <title>{props.label}</title>
        {ticks.map((t) => {
          const y = H - bottom - t * scale;
          return (
            <g key={t}>
              <line x1={left} x2={W} y1={y} y2={y} class="grid" />
              <text x={left - 6} y={y + 4} text-anchor="end" class="axis">{props.format(t)}</text>
            </g>
          );
        })}
        {days.map((day, i) => {
          let y = H - bottom;
          return (
            <g key={day}>
              {series.map((s, j) => {
                const h = (s.values[i] ?? 0) * scale;
                y -= h;
                return h > 0 ? <rect key={s.name} x={left + i * bw + 1} y={y} width={Math.max(bw - 2, 1)} height={h} fill={colourOf(j)}><title>{`${day} · ${s.name}: ${props.format(s.values[i] ?? 0)}`}</title></rect> : null;
              })}
              {(i === 0 || i === days.length - 1 || i % Math.ceil(days.length / 6) === 0)
                ? <text x={left + i * bw + bw / 2} y={H - 6} text-anchor={i === days.length - 1 ? 'end' : i === 0 ? 'start' : 'middle'} class="axis">{day.slice(5)}</text> : null}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul class="legend">
          {series.map((s, j) => <li key={s.name}><span class="swatch" style={{ background: colourOf(j) }} aria-hidden="true" />{s.name}</li>)}
        </ul>
      </figcaption>
    </figure>
  );
}
