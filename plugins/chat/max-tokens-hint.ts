import type { ErrorBody, ErrorFormatter } from '../../src/sdk.js';

/**
 * Issue 35: a Claude model asked on /v1/chat/completions without max_tokens gets the
 * spec's 400 (`gateway_error`, the provider's text `max_tokens: Field required`), and the
 * message names the fix after that text: send max_tokens, or give the project a default
 * (docs/chat.md, "The max_tokens rule"). OpenAI-format clients are the ones that do not
 * know Anthropic's rule; /v1/messages keeps Anthropic's own message as Anthropic sends it.
 */
export const MAX_TOKENS_HINT = 'hint: this model needs an output bound: send max_tokens (e.g. "max_tokens": 1024), '
  + 'or have the project given a default_max_tokens (gateway projects update PROJECT --org ORG --default-max-tokens N, or the console\'s Keys page), '
  + 'which is then sent for every request that names none';

const REFUSAL = /^max_tokens: Field required\b/;

/** The OpenAI error body, with the hint after the provider's max_tokens refusal. */
export const formatWithMaxTokensHint: ErrorFormatter = (err): ErrorBody => {
  const body = err.toBody();
  if (err.code === 'gateway_error' && REFUSAL.test(err.message)) body.error.message = `${err.message} (${MAX_TOKENS_HINT})`;
  return body;
};
