/**
 * A duration in the format OpenAI's `x-ratelimit-reset-*` headers use (Go's
 * `time.Duration` string at millisecond precision): `20ms`, `1s`, `8.64s`, `6m0s`,
 * `1h2m3.5s`. Rounded up to the millisecond so a client that waits this long is not early.
 */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const milli = total % 1000;
  // Whole seconds, then the milliseconds without their trailing zeros (`8.64s`, not `8.640s`).
  const fraction = milli === 0 ? '' : `.${String(milli).padStart(3, '0').replace(/0+$/, '')}`;
  const seconds = `${Math.floor((total % 60_000) / 1000)}${fraction}`;
  return `${hours ? `${hours}h` : ''}${hours || minutes ? `${minutes}m` : ''}${seconds}s`;
}

/** `retry-after` seconds: whole, at least 1, never shorter than the wait. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
