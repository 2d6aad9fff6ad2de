/**
 * How the console writes numbers, money and times: one rule each, everywhere
 * (docs/console.md, "Formats").
 *
 * Money: USD exact to the micro-dollar the API counts in: at least 2 decimals, more only
 * when the amount has them (up to 6), never rounded: $10.00, $0.05, $0.00005.
 * Time: UTC everywhere, said so: "27 Nov 2026, 14:05:09 UTC"; date-time pickers read and
 * write UTC too (`utcInput` / `fromUtcInput`).
 */

export function usd(n: number): string {
  const abs = Math.abs(n);
  const text = abs.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 });
  return `${n < 0 ? '−' : ''}$${text}`;
}

export const int = (n: number): string => n.toLocaleString('en-US');
export const pct = (x: number): string => `${(x * 100).toLocaleString('en-US', { maximumFractionDigits: 2 })}%`;

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return `${d.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZone: 'UTC' })} UTC`;
}

/** An ISO time as a datetime-local input's value, in UTC (the pickers are labelled UTC). */
export const utcInput = (iso: string): string => (iso ? new Date(iso).toISOString().slice(0, 16) : '');
/** A datetime-local input's value, read as UTC, as ISO 8601. */
export const fromUtcInput = (local: string): string => (local ? new Date(`${local}:00Z`).toISOString() : '');

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export const ms = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `${int(n)} ms`);

/**
 * Round axis ticks from 0 to at least `max`: steps of 1, 2 or 5 × 10ⁿ, about `count` of
 * them, so an axis reads $0.02, $0.04 … rather than $0.050154.
 */
export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const ticks: number[] = [];
  for (let i = 0; ticks.length === 0 || (ticks[ticks.length - 1] as number) < max; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

/** A USD price per unit (a decimal string from the catalogue) per `per` units, e.g. per million tokens. */
export function perUnit(price: string | undefined, per: number): string {
  const v = Number(price ?? '0');
  if (!Number.isFinite(v) || v === 0) return '—';
  return usd(Number((v * per).toPrecision(10)));
}
