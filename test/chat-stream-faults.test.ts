import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { SseEvent } from '../src/lib/sse.js';
import { chatMicros, post, readSse, settledBalance, simPromptTokens, type PerMillion } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow } from './harness.js';

/**
 * An upstream stream that breaks after its first bytes reached the client (dropped
 * connection, an error event, a malformed event) ends with an explicit error event —
 * never a silent [DONE] / message_stop — and is billed only for what was delivered.
 * The simulator sends about half of a reply's events before the fault.
 */

const t = useOrgGateway('faults', '5', {}, { ledger: true });

interface DialectCase {
  dialect: string;
  model: string;
  provider: string;
  price: PerMillion;
  /** What the simulator delivers of its 8-word reply before the fault. */
  text: string;
  /** Completion tokens billed for that text: a token per OpenAI chunk, ≈4 characters a token for
   * Anthropic deltas, Gemini's own cumulative count. */
  delivered: number;
  /** Whether the upstream reported the prompt count before the fault (else it is estimated from the text). */
  promptReported: boolean;
}

const DIALECTS: DialectCase[] = [
  { dialect: 'openai', model: 'gpt-4o-mini', provider: 'openai', price: { prompt: '0.15', completion: '0.60' }, text: 'This is a simulated reply.', delivered: 5, promptReported: false },
  { dialect: 'anthropic', model: 'claude-haiku-4-5', provider: 'anthropic', price: { prompt: '1', completion: '5' }, text: 'This is a simulated', delivered: 6, promptReported: true },
  { dialect: 'gemini', model: 'gemini-2.5-flash', provider: 'google', price: { prompt: '0.30', completion: '2.50' }, text: 'This is a simulated', delivered: 4, promptReported: true },
];

const ENDPOINTS = {
  '/v1/chat/completions': {
    text: (e: SseEvent) => (e.data.startsWith('{') ? ((JSON.parse(e.data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '') : ''),
    error: (e: SseEvent | undefined) => (e && e.event === undefined ? (JSON.parse(e.data) as { error?: Record<string, unknown> }).error : undefined),
    ended: (events: SseEvent[]) => events.some((e) => e.data === '[DONE]'),
  },
  '/v1/messages': {
    text: (e: SseEvent) => (e.event === 'content_block_delta' ? ((JSON.parse(e.data) as { delta: { text?: string } }).delta.text ?? '') : ''),
    error: (e: SseEvent | undefined) => (e?.event === 'error' ? (JSON.parse(e.data) as { error?: Record<string, unknown> }).error : undefined),
    ended: (events: SseEvent[]) => events.some((e) => e.event === 'message_stop'),
  },
} as const;

const CASES = DIALECTS.flatMap((d) => (['drop_mid_stream', 'stream_error'] as const).flatMap((fault) =>
  (Object.keys(ENDPOINTS) as Array<keyof typeof ENDPOINTS>).map((path) => ({ ...d, fault, path }))));

describe.each(CASES)('$dialect upstream, $fault, on $path', (c) => {
  it('ends with an error event after the delivered words and bills only those', async () => {
    const before = await t.balance(t.orgId);
    const content = `Tell me something [[sim:${c.fault}]]`;
    const res = await post(`${t.url}${c.path}`, { model: c.model, max_tokens: 50, stream: true, messages: [{ role: 'user', content }] }, t.key);
    expect(res.status).toBe(200);
    const events = await readSse(res);
    const ep = ENDPOINTS[c.path];
    expect(events.map(ep.text).join('')).toBe(c.text);
    expect(ep.ended(events)).toBe(false);
    const error = ep.error(events.at(-1));
    expect(error).toMatchObject({ code: 'upstream_error', usedProvider: c.provider, requestedModel: c.model });
    if (c.path === '/v1/messages') expect(error?.type).toBe('api_error');
    const prompt = c.promptReported ? simPromptTokens(content) : Math.ceil(content.length / 4);
    const cost = chatMicros(c.price, { prompt, completion: c.delivered });
    expect(before - (await settledBalance(t, t.orgId, before - cost))).toBe(cost);
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 200, errorCode: 'upstream_error', costMicros: cost, costEstimated: true, usedProvider: c.provider });
    expect(row.extra?.usage).toEqual({ prompt_tokens: prompt, completion_tokens: c.delivered });
  });
});

describe.each(DIALECTS)('$dialect upstream seen through the openai client', (c) => {
  it('raises an APIError from the error event after the delivered chunks', async () => {
    const stream = await t.client.chat.completions.create({ model: c.model, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'go [[sim:drop_mid_stream]]' }] });
    let text = '';
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toMatch(/upstream/i);
    expect(text).toBe(c.text);
  });

  it('a malformed first event is an error event and costs nothing (no word was delivered)', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/chat/completions`, { model: c.model, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x [[sim:malformed]]' }] }, t.key);
    const events = await readSse(res);
    expect(ENDPOINTS['/v1/chat/completions'].error(events.at(-1))).toMatchObject({ code: 'upstream_error' });
    expect(ENDPOINTS['/v1/chat/completions'].ended(events)).toBe(false);
    expect(await settledBalance(t, t.orgId, before)).toBe(before);
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ costMicros: 0, errorCode: 'upstream_error' });
  });
});
