import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Exchange } from '../src/pipeline/exchange.js';
import type { GatewayPlugin } from '../src/pipeline/plugin.js';
import { post, settledBalance } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, expectLedgerMatchesLog, logRow, postJson, tempDir } from './harness.js';

/**
 * Bad input on both chat endpoints gets a clear error code in the endpoint's own
 * error shape, and nothing is charged. A client that leaves before the upstream
 * answers cancels the upstream call.
 */

const START = 1_000_000;
let stall: { server: Server; received: Array<() => void>; closed: Array<() => void> };
/** Exchanges that reached post-billing (a client that left has no x-request-id to read). */
const finished: Exchange[] = [];
const recorder: GatewayPlugin = { name: 'recorder', modalities: {}, register: (api) => api.hook('post-billing', (ex) => { finished.push(ex); }) };

/** An upstream that never answers; it reports when a request arrives and when its connection closes. */
async function startStallingUpstream(): Promise<typeof stall> {
  const s = { received: [] as Array<() => void>, closed: [] as Array<() => void> };
  const server = createServer((req) => {
    req.resume();
    s.received.shift()?.();
    req.socket.on('close', () => s.closed.shift()?.());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, ...s };
}

const t = useOrgGateway('bad-chat-input', '1', async () => {
  stall = await startStallingUpstream();
  const dir = copyProviders(tempDir());
  writeFileSync(join(dir, 'stall.yaml'), `
id: stall
name: Stall
base_url: http://127.0.0.1:${(stall.server.address() as AddressInfo).port}/v1
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  chat: { path: /chat/completions, dialect: openai, timeout_ms: 60000 }
models:
  - { id: stall-model, modality: chat, max_output_tokens: 100, pricing: { prompt: "0.000001", completion: "0.000002" } }
`);
  return {
    providersDir: dir, extraPlugins: [recorder], yaml: { server: { host: '127.0.0.1', port: 0, body_limit_bytes: 4096 }, providers: { stall: { api_key: 'k' } } },
  };
});
afterEach(async () => {
  expect(await settledBalance(t, t.orgId, START)).toBe(START);
  await expectLedgerMatchesLog(t, t.orgId);
});
afterAll(async () => {
  stall.server.closeAllConnections();
  await new Promise((r) => stall.server.close(r));
});

interface Endpoint {
  path: string;
  /** The error object and its shape check, whatever the endpoint's format. */
  error(body: unknown): Record<string, unknown>;
}

const ENDPOINTS: Endpoint[] = [
  { path: '/v1/chat/completions', error: (b) => (b as { error: Record<string, unknown> }).error },
  {
    path: '/v1/messages',
    error: (b) => {
      expect((b as { type: string }).type).toBe('error');
      return (b as { error: Record<string, unknown> }).error;
    },
  },
];

const ok = { model: 'gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] };

const CASES: Array<[string, unknown, number, string, string | undefined]> = [
  ['empty messages', { ...ok, messages: [] }, 400, 'invalid_request', 'messages'],
  ['messages missing', { model: 'gpt-4o-mini', max_tokens: 20 }, 400, 'invalid_request', 'messages'],
  ['a wrong role', { ...ok, messages: [{ role: 'robot', content: 'x' }] }, 400, 'invalid_request', 'messages[0].role'],
  ['non-string content', { ...ok, messages: [{ role: 'user', content: 42 }] }, 400, 'invalid_request', 'messages[0].content'],
  ['a text part without a string text', { ...ok, messages: [{ role: 'user', content: [{ type: 'text', text: 7 }] }] }, 400, 'invalid_request', 'messages[0].content[0].text'],
  ['max_tokens 0', { ...ok, max_tokens: 0 }, 400, 'invalid_request', 'max_tokens'],
  ['max_tokens not an integer', { ...ok, max_tokens: 2.5 }, 400, 'invalid_request', 'max_tokens'],
  ['stream not a boolean', { ...ok, stream: 'yes' }, 400, 'invalid_request', 'stream'],
  ['model missing', { messages: ok.messages }, 400, 'invalid_request', 'model'],
  ['an unknown model', { ...ok, model: 'gpt-0' }, 404, 'model_not_found', 'model'],
  ['a body over the limit', { ...ok, messages: [{ role: 'user', content: 'x'.repeat(8192) }] }, 413, 'body_too_large', undefined],
  ['not JSON', '{"model": ', 400, 'invalid_json', undefined],
];

describe.each(ENDPOINTS)('$path', (ep) => {
  it.each(CASES)('refuses %s', async (_name, body, status, code, param) => {
    const calls = JSON.stringify(t.sim.calls());
    const r = await postJson(`${t.url}${ep.path}`, body, t.key);
    expect(r.status).toBe(status);
    const error = ep.error(r.body);
    expect(error.code).toBe(code);
    expect(typeof error.message).toBe('string');
    if (param) expect(error.param).toBe(param);
    expect(JSON.stringify(t.sim.calls())).toBe(calls); // nothing went upstream
  });

  it('accepts a system role inside messages, /v1/messages included (Claude Code sends them there)', async () => {
    const r = await postJson(`${t.url}${ep.path}`, { ...ok, messages: [{ role: 'system', content: 'x' }, ...ok.messages] }, t.key);
    expect(r.status).toBe(200);
    await expectLedgerMatchesLog(t, t.orgId);
    await t.gateway.store.addCredits(t.orgId, START - (await t.balance(t.orgId)), 'test top-up'); // keep START for the next case
  });

  it('cancels the upstream and charges nothing when the client leaves before the upstream answers', async () => {
    const received = new Promise<void>((r) => stall.received.push(r));
    const closed = new Promise<void>((r) => stall.closed.push(r));
    const ac = new AbortController();
    const pending = post(`${t.url}${ep.path}`, { ...ok, model: 'stall-model' }, t.key, {}, ac.signal).catch((e: unknown) => e);
    await received;
    ac.abort();
    await pending;
    await closed; // the gateway hung up on the upstream: the call was cancelled, not left running
    const rows = await waitForRow('stall-model');
    expect(rows).toMatchObject({ status: 499, errorCode: 'client_closed_request', costMicros: 0, usedProvider: 'stall' });
  });
});

describe('features a provider cannot take are refused before any call', () => {
  it.each([
    ['claude-haiku-4-5', { tools: [{ type: 'web_search' }] }, 'tools[0]'],
    ['claude-haiku-4-5', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } }, 'response_format'],
    ['gemini-2.5-flash', { logprobs: true }, 'logprobs'],
    ['gemini-2.5-flash', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }, 'messages[0].content'],
    ['claude-haiku-4-5', { n: 2 }, 'n'],
  ])('%s with %j → 400 naming %s', async (model, extra, param) => {
    const calls = JSON.stringify(t.sim.calls());
    const r = await postJson(`${t.url}/v1/chat/completions`, { ...ok, model, ...extra }, t.key);
    expect(r.status).toBe(400);
    expect((r.body as { error: Record<string, unknown> }).error).toMatchObject({ code: 'invalid_request', param });
    expect(JSON.stringify(t.sim.calls())).toBe(calls);
  });
});

/** The next exchange of `model` to reach post-billing (bounded wait), then its log row. */
async function waitForRow(model: string) {
  for (let i = 0; i < 200; i++) {
    const ex = finished.find((e) => e.requestedModel === model);
    if (ex) {
      finished.splice(finished.indexOf(ex), 1);
      return logRow(t, ex.id);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no finished request for ${model}`);
}
