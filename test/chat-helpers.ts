import { parseUsdToPicos, picosToMicros } from '../src/lib/money.js';
import { SseDecoder, type SseEvent } from '../src/lib/sse.js';
import type { TestGateway } from './harness.js';

/** Prices in USD per million tokens, written out in the tests (not read from the YAML under test). */
export interface PerMillion {
  prompt: string;
  completion: string;
  cacheRead?: string;
  cacheWrite?: string;
}

/** Micro-USD for `tokens` at `usdPerMillion`, rounded half to even as the gateway rounds. */
export function micros(tokens: number, usdPerMillion: string): number {
  return picosToMicros(BigInt(tokens) * (parseUsdToPicos(usdPerMillion) / 1_000_000n));
}

/** The chat cost the gateway must charge: input and output rounded apart, then added. */
export function chatMicros(p: PerMillion, u: { prompt: number; completion: number; cacheRead?: number; cacheWrite?: number }): number {
  const read = u.cacheRead ?? 0;
  const write = u.cacheWrite ?? 0;
  const inputPicos = BigInt(u.prompt - read - write) * (parseUsdToPicos(p.prompt) / 1_000_000n)
    + BigInt(read) * (parseUsdToPicos(p.cacheRead ?? p.prompt) / 1_000_000n)
    + BigInt(write) * (parseUsdToPicos(p.cacheWrite ?? p.prompt) / 1_000_000n);
  return picosToMicros(inputPicos) + micros(u.completion, p.completion);
}

/** The simulator's prompt count: ceil(characters / 4) + 3 per message. */
export function simPromptTokens(text: string, messages = 1): number {
  return Math.ceil(text.length / 4) + 3 * messages;
}

/** Waits (bounded) until the org's balance stops being held by a reservation and equals `expected`. */
export async function settledBalance(t: TestGateway, orgId: string, expected: number): Promise<number> {
  let balance = await t.balance(orgId);
  for (let i = 0; i < 100 && balance !== expected; i++) {
    await new Promise((r) => setTimeout(r, 20));
    balance = await t.balance(orgId);
  }
  return balance;
}

/** Every SSE event of a response body, read to its end. */
export async function readSse(res: Response): Promise<SseEvent[]> {
  const decoder = new SseDecoder();
  const events: SseEvent[] = [];
  if (!res.body) return events;
  for await (const chunk of res.body) events.push(...decoder.push(chunk as Uint8Array));
  events.push(...decoder.end());
  return events;
}

/** POSTs a JSON body with a bearer key and returns the raw Response (for streams). */
export function post(url: string, body: unknown, key: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST', signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
}
