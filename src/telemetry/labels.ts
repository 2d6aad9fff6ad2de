import { ERRORS } from '../lib/errors.js';

/**
 * Label values stay bounded: a metric label is a route pattern, a catalog model or
 * provider id, an HTTP status, an error code from src/lib/errors.ts or a token type —
 * never a request id, a key or a client's free text.
 */

/** The model label of a request whose model did not resolve (or that named none). */
export const UNKNOWN_MODEL = 'unknown';
/** The provider label of a request that reached no provider. */
export const NO_PROVIDER = 'none';

/** An error code from src/lib/errors.ts, `none` for a success; anything else (a plugin's typo) is `other`. */
export function codeLabel(code: string | null): string {
  if (code === null) return 'none';
  return Object.hasOwn(ERRORS, code) ? code : 'other';
}
