/**
 * Counts an upstream reports (tokens, audio seconds) are multiplied by a price: a
 * negative, fractional or absurd one must never become a charge. Plugins read every
 * such count through these helpers; a bad one makes the reply malformed (InvalidUsage,
 * which the plugin turns into a 502 `upstream_error`, not charged).
 */

/** Ten times the largest context window any provider offers: more is garbage, not usage. */
export const MAX_REPORTED_TOKENS = 100_000_000;
/** About 11.5 days of audio: far past the 25 MB a transcription may upload. */
export const MAX_REPORTED_SECONDS = 1_000_000;

/** A count in an upstream reply that cannot be billed. */
export class InvalidUsage extends Error {}

/** A token count as reported: absent (undefined, null) stays absent; otherwise a whole number from 0 to MAX_REPORTED_TOKENS. */
export function reportedTokens(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_REPORTED_TOKENS) {
    throw new InvalidUsage(`the upstream reported ${field} = ${JSON.stringify(value)}, not a token count from 0 to ${MAX_REPORTED_TOKENS}; not charged`);
  }
  return value;
}

/** Audio seconds as reported: absent stays absent; otherwise a finite number from 0 to MAX_REPORTED_SECONDS. */
export function reportedSeconds(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_REPORTED_SECONDS) {
    throw new InvalidUsage(`the upstream reported ${field} = ${JSON.stringify(value)}, not a duration from 0 to ${MAX_REPORTED_SECONDS} seconds; not charged`);
  }
  return value;
}
