import { GatewayError } from './errors.js';

/**
 * An upstream reply's JSON body, parsed. Text that is not JSON is the upstream's fault,
 * not the client's: a 502 `upstream_error` whose message is `detail`.
 */
export function upstreamJson(text: string, detail: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new GatewayError('upstream_error', [detail]);
  }
}
