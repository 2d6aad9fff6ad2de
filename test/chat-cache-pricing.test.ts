import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chatMicros, post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, logRow, postJson, tempDir } from './harness.js';

/**
 * Exact metering with prompt caching: an upstream that reports cache reads (and, for
 * Anthropic, cache writes) is billed at the model's input_cache_read /
 * input_cache_write prices, and the client sees the split in its usage.
 * Every upstream here reports 1200 prompt tokens: 1000 read from cache, (Anthropic) 150
 * written to it, 50 fresh; and 10 completion tokens.
 */

const ANTHROPIC_USAGE = { input_tokens: 50, cache_read_input_tokens: 1000, cache_creation_input_tokens: 150, output_tokens: 10 };
const REPLIES: Record<string, { json: unknown; sse: string }> = {
  openai: {
    json: { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1200, completion_tokens: 10, total_tokens: 1210, prompt_tokens_details: { cached_tokens: 1000 } } },
    sse: `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":1000}}}\n\ndata: [DONE]\n\n`,
  },
  anthropic: {
    json: { id: 'msg_c', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: ANTHROPIC_USAGE },
    sse: [
      `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_c', type: 'message', role: 'assistant', content: [], usage: { ...ANTHROPIC_USAGE, output_tokens: 1 } } })}\n\n`,
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}\n\n',
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":10}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ].join(''),
  },
  gemini: {
    json: { candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 1200, cachedContentTokenCount: 1000, candidatesTokenCount: 10, totalTokenCount: 1210 } },
    sse: `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 1200, cachedContentTokenCount: 1000, candidatesTokenCount: 10 } })}\r\n\r\n`,
  },
};

let server: Server;

const t = useOrgGateway('cache', '1', async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '';
      const dialect = url.includes('/messages') ? 'anthropic' : url.includes(':') ? 'gemini' : 'openai';
      const stream = (JSON.parse(Buffer.concat(chunks).toString()) as { stream?: boolean }).stream === true || url.includes('stream');
      const reply = REPLIES[dialect]!;
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      res.end(stream ? reply.sse : JSON.stringify(reply.json));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = copyProviders(tempDir());
  // Sonnet-like prices: $3/M in, $15/M out, $0.30/M cache read, $3.75/M cache write.
  const prices = '{ prompt: "0.000003", completion: "0.000015", input_cache_read: "0.0000003", input_cache_write: "0.00000375" }';
  const file = (id: string, path: string, dialect: string) => `id: ${id}\nname: ${id}\nbase_url: ${base}/v1\nauth: { header: Authorization, format: "Bearer {key}" }\n`
    + `endpoints:\n  chat: { path: "${path}", dialect: ${dialect} }\nmodels:\n  - { id: ${id}-model, modality: chat, max_output_tokens: 100, pricing: ${prices} }\n`;
  writeFileSync(join(dir, 'cache-openai.yaml'), file('cache-openai', '/chat/completions', 'openai'));
  writeFileSync(join(dir, 'cache-anthropic.yaml'), file('cache-anthropic', '/messages', 'anthropic-messages'));
  writeFileSync(join(dir, 'cache-gemini.yaml'), file('cache-gemini', '/models/{model}:{action}', 'gemini'));
  return {
    providersDir: dir, yaml: { providers: Object.fromEntries(['cache-openai', 'cache-anthropic', 'cache-gemini'].map((id) => [id, { api_key: 'k' }])) },
  };
}, { ledger: true });
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const PRICE = { prompt: '3', completion: '15', cacheRead: '0.30', cacheWrite: '3.75' };
const CASES = [
  { dialect: 'openai', cacheWrite: 0 },
  { dialect: 'anthropic', cacheWrite: 150 },
  { dialect: 'gemini', cacheWrite: 0 },
];

describe.each(CASES)('$dialect upstream reporting cached prompt tokens', ({ dialect, cacheWrite }) => {
  const cost = chatMicros(PRICE, { prompt: 1200, completion: 10, cacheRead: 1000, cacheWrite });
  // A cached prefix travels in the request: 1200 tokens of it take at least 1200 bytes.
  const body = { model: `cache-${dialect}-model`, max_tokens: 20, messages: [{ role: 'user', content: 'Context: '.repeat(150) }] };

  it('bills reads and writes at their prices on /v1/chat/completions, showing cached_tokens', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, body, t.key);
    expect(r.status).toBe(200);
    const usage = (r.body as { usage: Record<string, unknown> }).usage;
    expect(usage).toMatchObject({ prompt_tokens: 1200, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 1000 } });
    expect(Math.round((usage.cost_usd_total as number) * 1e6)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.extra?.usage).toEqual({ prompt_tokens: 1200, completion_tokens: 10, cached_tokens: 1000, ...(cacheWrite ? { cache_write_tokens: cacheWrite } : {}) });
  });

  it('shows the split in Anthropic terms on /v1/messages, streamed', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/messages`, { ...body, stream: true }, t.key);
    const delta = (await readSse(res)).find((e) => e.event === 'message_delta');
    const usage = (JSON.parse(delta?.data ?? '{}') as { usage: Record<string, number> }).usage;
    expect(usage).toMatchObject({ input_tokens: 1200 - 1000 - cacheWrite, cache_read_input_tokens: 1000, cache_creation_input_tokens: cacheWrite, output_tokens: 10 });
    expect(Math.round(usage.cost_usd_total! * 1e6)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });
});
