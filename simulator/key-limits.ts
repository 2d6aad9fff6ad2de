import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { authScheme, header, sendJson } from './http.js';

/**
 * Per-key rate limits, as a provider enforces them on an account or organization: a test
 * (or `POST /__sim/rate-limit?key=…&seconds=…`) makes one key answer 429 for a while, with
 * the `Retry-After` a provider sends (the seconds left, rounded up), in OpenAI's error shape,
 * while every other key is served. Each call is counted and logged by key, so a test sees
 * which deployment of the gateway got the traffic and when.
 */
export class KeyLimits {
  private readonly limitedUntil = new Map<string, number>();
  private readonly counts = new Map<string, { calls: number; limited: number }>();
  private readonly log: KeyCall[] = [];

  /** From now on, for `seconds`, requests made with `key` get 429 + Retry-After. */
  limit(key: string, seconds: number): void {
    this.limitedUntil.set(key, Date.now() + seconds * 1000);
  }

  /** Counts the call; sends the 429 and returns true when its key is rate-limited now. */
  refused(headers: IncomingHttpHeaders, res: ServerResponse): boolean {
    const key = credential(headers);
    if (key === undefined) return false;
    const now = Date.now();
    const until = this.limitedUntil.get(key);
    const limited = until !== undefined && until > now;
    const count = this.counts.get(key) ?? { calls: 0, limited: 0 };
    count.calls++;
    if (limited) count.limited++;
    this.counts.set(key, count);
    this.log.push({ key, at: now, limited });
    if (this.log.length > MAX_LOG) this.log.shift();
    if (!limited) return false;
    const seconds = Math.max(1, Math.ceil((until - now) / 1000));
    sendJson(res, 429, {
      error: { message: 'Rate limit reached for requests (simulated per-key limit).', type: 'requests', param: null, code: 'rate_limit_exceeded' },
    }, { 'retry-after': String(seconds), 'x-ratelimit-reset-requests': `${seconds}s` });
    return true;
  }

  calls(): Record<string, { calls: number; limited: number }> {
    return Object.fromEntries([...this.counts].map(([k, v]) => [k, { ...v }]));
  }

  /** The latest calls (at most 20,000), oldest first. */
  history(): KeyCall[] {
    return [...this.log];
  }

  reset(): void {
    this.limitedUntil.clear();
    this.counts.clear();
    this.log.length = 0;
  }
}

export interface KeyCall {
  key: string;
  at: number;
  limited: boolean;
}

const MAX_LOG = 20_000;

/** The key a request carries, whatever the provider's header: Bearer, x-api-key (Anthropic), api-key (Azure), x-goog-api-key (Gemini). */
function credential(headers: IncomingHttpHeaders): string | undefined {
  return authScheme(headers, 'bearer') ?? header(headers, 'x-api-key') ?? header(headers, 'api-key') ?? header(headers, 'x-goog-api-key');
}
