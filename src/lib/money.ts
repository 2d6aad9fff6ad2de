/**
 * Money. Balances and costs are integer micro-USD (1e-6 USD). Per-token prices are
 * far below a micro-dollar, so prices are held as bigint pico-USD (1e-12) and a cost
 * is rounded to micro-USD once, half to even, when it is computed.
 */

export type Micros = number;
const MICROS_PER_USD = 1_000_000;

/**
 * The most an org's balance may hold, and the largest USD amount the gateway takes in
 * (a credit, a budget): 10^15 µUSD = $1,000,000,000. Far inside 2^53 (≈ 9.007 × 10^15),
 * so balances, their sums and ledger arithmetic stay exact in a JS number, whatever
 * SQLite or PostgreSQL compute. A credit that would take a balance past it is refused
 * before anything is written.
 */
export const MAX_BALANCE_MICROS = 1_000_000_000_000_000;
const PICOS_PER_MICRO = 1_000_000n;

/** Parses a decimal USD string ("0.00000015") into pico-USD; refuses more than 12 decimals. */
export function parseUsdToPicos(usd: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,12}))?$/.exec(usd.trim());
  if (!m) throw new RangeError(`not a USD amount with at most 12 decimals: ${JSON.stringify(usd)}`);
  const whole = BigInt(m[1] ?? '0');
  const frac = BigInt((m[2] ?? '').padEnd(12, '0'));
  return whole * 1_000_000_000_000n + frac;
}

/** Parses a decimal USD string with at most 6 decimals into micro-USD (for credits, budgets); at most MAX_BALANCE_MICROS. */
export function parseUsdToMicros(usd: string): Micros {
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(usd.trim());
  if (!m) throw new RangeError(`not a USD amount with at most 6 decimals: ${JSON.stringify(usd)}`);
  const micros = BigInt(m[1] ?? '0') * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0'));
  if (micros > BigInt(MAX_BALANCE_MICROS)) throw new AmountTooLargeError(`amount too large: ${usd} (at most ${formatUsd(MAX_BALANCE_MICROS)} USD)`);
  return Number(micros);
}

/** A USD amount past MAX_BALANCE_MICROS. */
export class AmountTooLargeError extends RangeError {}

/** Rounds pico-USD to micro-USD, half to even, so that rounding errors do not drift one way. */
export function picosToMicros(picos: bigint): Micros {
  const q = picos / PICOS_PER_MICRO;
  const r = picos % PICOS_PER_MICRO;
  const half = PICOS_PER_MICRO / 2n;
  const up = r > half || (r === half && q % 2n === 1n);
  return safe(up ? q + 1n : q);
}

/**
 * Micro-USD as a number, a value past 2^53 − 1 (a price × tokens no balance or budget,
 * both at most MAX_BALANCE_MICROS, can ever cover) saturated there: still above every
 * balance and budget, so it is refused (402, or the budget's 429), never a 500 for an
 * unsafe integer, and a charge capped at a reservation never reaches it.
 */
function safe(micros: bigint): Micros {
  return micros > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(micros);
}

/** Rounds pico-USD up to micro-USD: for reservations, which must never be below the cost. */
export function picosToMicrosCeil(picos: bigint): Micros {
  return safe((picos + PICOS_PER_MICRO - 1n) / PICOS_PER_MICRO);
}

/** Micro-USD as the USD number the API shows (`usage.cost_usd`). */
export function microsToUsd(micros: Micros): number {
  return micros / MICROS_PER_USD;
}

/** Micro-USD as a fixed 6-decimal string for humans (CLI output, error messages). */
export function formatUsd(micros: Micros): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  return `${sign}${Math.floor(abs / MICROS_PER_USD)}.${String(abs % MICROS_PER_USD).padStart(6, '0')}`;
}

/**
 * Micro-USD for people, as the console writes it (docs/cli.md, "Money"): `$`, thousands
 * separated, at least 2 decimals and up to 6, exact — `$10.00`, `$0.00005`, `$1,234.567891`.
 * Never rounded, so a non-zero amount never reads `$0.00`.
 */
export function displayUsd(micros: Micros): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = String(Math.floor(abs / MICROS_PER_USD)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = String(abs % MICROS_PER_USD).padStart(6, '0').replace(/0{1,4}$/, '');
  return `${sign}$${whole}.${fraction}`;
}
