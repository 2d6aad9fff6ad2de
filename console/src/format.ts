/** How the console writes numbers, money and times. */

/** USD as exact as the API gives it (micro-dollars): at least 2 decimals, up to 6, never rounded away. */
export function usd(n: number, digits?: number): string {
  const abs = Math.abs(n);
  const text = abs.toLocaleString('en-US', { minimumFractionDigits: digits ?? 2, maximumFractionDigits: digits ?? 6 });
  return `${n < 0 ? '−' : ''}$${text}`;
}

export const int = (n: number): string => n.toLocaleString('en-US');
export const pct = (x: number): string => `${(x * 100).toLocaleString('en-US', { maximumFractionDigits: 2 })}%`;

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZone: 'UTC' }) + ' UTC';
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export const ms = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `${int(n)} ms`);

/** A USD price per unit (a decimal string from the catalogue) per `per` units, e.g. per million tokens. */
export function perUnit(price: string | undefined, per: number): string {
  const v = Number(price ?? '0');
  if (!Number.isFinite(v) || v === 0) return '—';
  const x = v * per;
  return `$${Number(x.toPrecision(10)).toLocaleString('en-US', { maximumFractionDigits: 6 })}`;
}
