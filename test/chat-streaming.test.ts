import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SseDecoder, type SseEvent } from '../src/lib/sse.js';
import { post, settledBalance } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, logRow, tempDir } from './harness.js';

/**
 * Streaming is incremental and cancellable, proven without timers: a gated upstream
 * sends the first words of a reply and then waits for the test. A client that sees
 * those words before the gate opens proves nothing was buffered; a client that
 * leaves while the upstream waits proves the upstream call is cancelled (the
 * upstream sees its connection close) and that the delivered words are billed.
 */

type Dialect = 'openai' | 'anthropic' | 'gemini';

interface UpstreamCall {
  release(): void;
  /** Resolves when the upstream's response closes; `finished` is false when the gateway hung up first. */
  closed: Promise<{ finished: boolean }>;
}

const sse = (data: unknown, event?: string, sep = '\n\n'): string => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}${sep}`;
const oaChunk = (delta: object, finish: string | null = null) => ({ id: 'chatcmpl-g', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
const gem = (text: string, candidates: number, finish?: string) => ({
  candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
  usageMetadata: { promptTokenCount: 11, candidatesTokenCount: candidates, totalTokenCount: 11 + candidates },
});

/** The reply "Hello world" in each wire format, split at the gate. Upstream usage: 11 prompt, 2 completion tokens. */
const REPLIES: Record<Dialect, { first: string; rest: string }> = {
  openai: {
    first: sse(oaChunk({ role: 'assistant', content: '' })) + sse(oaChunk({ content: 'Hello' })),
    rest: sse(oaChunk({ content: ' world' })) + sse(oaChunk({}, 'stop'))
      + sse({ id: 'chatcmpl-g', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 11, completion_tokens: 2, total_tokens: 13 } }) + 'data: [DONE]\n\n',
  },
  anthropic: {
    first: sse({ type: 'message_start', message: { id: 'msg_g', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 11, output_tokens: 1 } } }, 'message_start')
      + sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start')
      + sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } }, 'content_block_delta'),
    rest: sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' world' } }, 'content_block_delta')
      + sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop')
      + sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }, 'message_delta')
      + sse({ type: 'message_stop' }, 'message_stop'),
  },
  gemini: { first: sse(gem('Hello', 1), undefined, '\r\n\r\n'), rest: sse(gem(' world', 2, 'STOP'), undefined, '\r\n\r\n') },
};

function dialectOf(path: string): Dialect {
  if (path.endsWith('/messages')) return 'anthropic';
  return path.includes(':streamGenerateContent') ? 'gemini' : 'openai';
}

/** An upstream that answers each stream with REPLIES[…].first, then waits for `release()`. */
async function startGatedUpstream(): Promise<{ url: string; server: Server; next(): Promise<UpstreamCall> }> {
  const waiting: Array<(c: UpstreamCall) => void> = [];
  const ready: UpstreamCall[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const reply = REPLIES[dialectOf(req.url ?? '')];
      let release = (): void => undefined;
      const gate = new Promise<void>((r) => { release = r; });
      const closed = new Promise<{ finished: boolean }>((r) => res.on('close', () => r({ finished: res.writableFinished })));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(reply.first);
      void gate.then(() => res.end(reply.rest));
      const call = { release, closed };
      const w = waiting.shift();
      if (w) w(call);
      else ready.push(call);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, server, next: () => new Promise((r) => { const c = ready.shift(); if (c) r(c); else waiting.push(r); }) };
}

let upstream: Awaited<ReturnType<typeof startGatedUpstream>>;

const t = useOrgGateway('streams', '1', async () => {
  upstream = await startGatedUpstream();
  const providers = copyProviders(tempDir());
  const file = (id: string, base: string, path: string, dialect: string) => `
id: ${id}
name: ${id}
base_url: ${upstream.url}${base}
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  chat: { path: "${path}", dialect: ${dialect}, timeout_ms: 30000 }
models:
  - { id: ${id}-model, modality: chat, max_output_tokens: 100, pricing: { prompt: "0.00001", completion: "0.00002" } }
`;
  writeFileSync(join(providers, 'gated-openai.yaml'), file('gated-openai', '/v1', '/chat/completions', 'openai'));
  writeFileSync(join(providers, 'gated-anthropic.yaml'), file('gated-anthropic', '/v1', '/messages', 'anthropic-messages'));
  writeFileSync(join(providers, 'gated-gemini.yaml'), file('gated-gemini', '/v1beta', '/models/{model}:{action}', 'gemini'));
  return {
    providersDir: providers, yaml: { providers: Object.fromEntries(['gated-openai', 'gated-anthropic', 'gated-gemini'].map((id) => [id, { api_key: 'k' }])) },
  };
}, { ledger: true });
afterAll(async () => {
  upstream.server.closeAllConnections();
  await new Promise((r) => upstream.server.close(r));
});

/** How each endpoint shows a piece of text in its stream. */
const ENDPOINTS = {
  'chat/completions': {
    path: '/v1/chat/completions',
    text: (e: SseEvent) => (e.data.startsWith('{') ? ((JSON.parse(e.data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '') : ''),
    last: (events: SseEvent[]) => events.at(-1)?.data === '[DONE]',
  },
  messages: {
    path: '/v1/messages',
    text: (e: SseEvent) => (e.event === 'content_block_delta' ? ((JSON.parse(e.data) as { delta: { text?: string } }).delta.text ?? '') : ''),
    last: (events: SseEvent[]) => events.at(-1)?.event === 'message_stop',
  },
} as const;

/** Reads events until `text` has arrived; returns the reader to go on with. */
async function readUntil(res: Response, toText: (e: SseEvent) => string, text: string) {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new SseDecoder();
  const events: SseEvent[] = [];
  let seen = '';
  while (!seen.includes(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before "${text}" arrived`);
    for (const e of decoder.push(value)) {
      events.push(e);
      seen += toText(e);
    }
  }
  return { reader, decoder, events };
}

const CASES = (['openai', 'anthropic', 'gemini'] as const).flatMap((dialect) => (['chat/completions', 'messages'] as const).map((endpoint) => ({ dialect, endpoint })));
/** 11 prompt tokens at $10/M and 2 completion tokens at $20/M, as the upstreams report. */
const FULL_COST = 11 * 10 + 2 * 20;

describe.each(CASES)('$dialect upstream → /v1/$endpoint', ({ dialect, endpoint }) => {
  const ep = ENDPOINTS[endpoint];
  const body = { model: `gated-${dialect}-model`, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Say hello to the world' }] };

  it('forwards the first words while the upstream is still generating, then completes and bills the upstream usage', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}${ep.path}`, body, t.key);
    expect(res.status).toBe(200);
    const call = await upstream.next();
    // The upstream has not finished: seeing "Hello" now proves the gateway did not buffer the reply.
    const { reader, decoder, events } = await readUntil(res, ep.text, 'Hello');
    call.release();
    for (let r = await reader.read(); !r.done; r = await reader.read()) events.push(...decoder.push(r.value));
    expect(events.map(ep.text).join('')).toBe('Hello world');
    expect(ep.last(events)).toBe(true);
    expect((await call.closed).finished).toBe(true);
    expect(before - (await settledBalance(t, t.orgId, before - FULL_COST))).toBe(FULL_COST);
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 200, costMicros: FULL_COST, costEstimated: false, errorCode: null });
  });

  it('cancels the upstream when the client leaves mid-stream and bills the delivered words (estimated)', async () => {
    const before = await t.balance(t.orgId);
    const ac = new AbortController();
    const res = await post(`${t.url}${ep.path}`, body, t.key, {}, ac.signal);
    const call = await upstream.next();
    const { reader } = await readUntil(res, ep.text, 'Hello');
    ac.abort();
    await reader.cancel().catch(() => undefined);
    // The gate is never opened: the upstream connection closes only because the gateway cancelled it.
    expect((await call.closed).finished).toBe(false);
    // Delivered: "Hello". OpenAI counts a token per chunk; Anthropic ≈ 4 characters a token; Gemini's
    // cumulative usage says 1. The prompt is the upstream's count where it sent one before the cut.
    const delivered = { openai: 1, anthropic: 2, gemini: 1 }[dialect];
    const prompt = dialect === 'openai' ? Math.ceil('Say hello to the world'.length / 4) : 11;
    const cost = prompt * 10 + delivered * 20;
    expect(before - (await settledBalance(t, t.orgId, before - cost))).toBe(cost);
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ costMicros: cost, costEstimated: true });
    expect(row.extra?.usage).toEqual({ prompt_tokens: prompt, completion_tokens: delivered });
  });
});
