/**
 * Tokens a request was billed for, by type, as its plugin metered them. `cachedInput`
 * is the part of `input` read from the provider's cache and `reasoning` the part of
 * `output` spent thinking: parts, not additions.
 */
export interface TokenCounts {
  input: number;
  output: number;
  cachedInput: number;
  reasoning: number;
}
