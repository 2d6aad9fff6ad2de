/**
 * The one token estimate in the project: about four characters a token. The gateway
 * uses it only where a provider reported no count (a stream cut short, a reply
 * without usage, providers that stream several tokens an event); the simulator counts
 * with it, so tests can predict exactly what the gateway meters.
 */
export function estimateTokens(text: string): number {
  return tokensForChars(text.length);
}

/** `estimateTokens` for a character count already summed (several messages or parts). */
export function tokensForChars(chars: number): number {
  return Math.ceil(chars / 4);
}
