import type { UpstreamAttempt } from '../store/types.js';

/*
 * What a request-log row keeps of the strings a client chose (docs/management.md, "Logs").
 * A refused request is logged too, so without a bound any key holder could store a
 * megabyte per request for free (an unknown 200,000-character model id, a 900 KB prompt
 * refused by a limit). The sizes follow what the log is read for: a model id is a name
 * (the catalogue's are under 100 characters), the prompt is a reminder of what was asked,
 * not an archive, and a provider's error message is a sentence.
 */

/** Characters of the requested model id a row keeps. */
export const MAX_LOGGED_MODEL_CHARS = 256;
/** Characters of the prompt text a row keeps. */
export const MAX_LOGGED_PROMPT_CHARS = 16_384;
/** Characters of each upstream attempt's error message a row keeps. */
const MAX_LOGGED_ERROR_CHARS = 1_024;

/** The first `max` UTF-16 units of `s`, never ending in half a surrogate pair. */
export function clipText(s: string, max: number): string {
  if (s.length <= max) return s;
  const code = s.charCodeAt(max - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** The attempts with their error messages bounded (the same array when none needed it). */
export function boundedAttempts(attempts: UpstreamAttempt[]): UpstreamAttempt[] {
  if (!attempts.some((a) => a.error !== null && a.error.length > MAX_LOGGED_ERROR_CHARS)) return attempts;
  return attempts.map((a) => (a.error !== null && a.error.length > MAX_LOGGED_ERROR_CHARS ? { ...a, error: clipText(a.error, MAX_LOGGED_ERROR_CHARS) } : a));
}
