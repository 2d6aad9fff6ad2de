import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, logRow, postJson, tempDir } from './harness.js';
import { eventually, type ReceivedSpan, scrape, startOtlpReceiver, total } from './telemetry-helpers.js';

/**
 * Observability end to end: Prometheus counters after known traffic move by exactly
 * the tokens and cost the responses reported (and the ledger charged); spans reach a
 * local OTLP/HTTP receiver with the GenAI attributes, continue the caller's trace, and
 * show one child span per upstream attempt.
 */

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>> | undefined;
// Registered before the gateway's own afterAll, so it runs after it: the gateway exports its last spans on close.
afterAll(async () => receiver?.close());

const t = useOrgGateway('observed', '5', async (sim) => {
  receiver = await startOtlpReceiver();
  const dir = copyProviders(tempDir());
  // A second route for claude-haiku-4-5 after anthropic.yaml, so a failing Anthropic falls back to it.
  writeFileSync(join(dir, 'backup.yaml'), `
id: backup
name: backup
base_url: ${sim.url}/backup/v1
auth: { header: x-api-key, format: "{key}" }
endpoints:
  chat: { path: /messages, dialect: anthropic-messages, retry: { attempts: 1 }, fallback: true }
models:
  - { id: claude-haiku-4-5, upstream_id: claude-haiku-4-5-20251001, modality: chat, max_output_tokens: 1000, pricing: { prompt: "0.000002", completion: "0.00001" } }
`);
  return {
    providersDir: dir,
    yaml: {
      providers: { backup: { api_key: 'sim-key' } },
      metrics: { host: '127.0.0.1', port: 0 },
      telemetry: { otlp: { endpoint: `${receiver.url}/` } },
    },
  };
}, { ledger: true });

const metricsUrl = (): string => t.gateway.metricsUrl ?? '';
const usd = (x: unknown): number => Math.round(Number(x) * 1e6);
const chat = (model: string, content: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 30, messages: [{ role: 'user', content }], ...extra });

interface OpenAIUsage { prompt_tokens: number; completion_tokens: number; cost_usd_total: number; prompt_tokens_details?: { cached_tokens?: number }; completion_tokens_details?: { reasoning_tokens?: number } }

/** The tokens by type and the micro-USD a client was told it used. */
interface Told { input: number; output: number; cached_input: number; reasoning: number; micros: number }
const told = (): Told => ({ input: 0, output: 0, cached_input: 0, reasoning: 0, micros: 0 });
function addOpenAI(sum: Told, u: OpenAIUsage): void {
  sum.input += u.prompt_tokens;
  sum.output += u.completion_tokens;
  sum.cached_input += u.prompt_tokens_details?.cached_tokens ?? 0;
  sum.reasoning += u.completion_tokens_details?.reasoning_tokens ?? 0;
  sum.micros += usd(u.cost_usd_total);
}

describe('Prometheus metrics', () => {
  it('after non-streamed, streamed, Anthropic-format, embeddings and failing requests, tokens and cost moved by exactly what the responses reported', async () => {
    const before = await scrape(metricsUrl());
    const balanceBefore = await t.balance(t.orgId);
    const ids: string[] = [];
    const sums = { 'gpt-4o-mini': told(), 'claude-haiku-4-5': told(), 'text-embedding-3-small': told() };

    const plain = await postJson(`${t.url}/v1/chat/completions`, chat('gpt-4o-mini', 'Count the toll booths.'), t.key);
    expect(plain.status).toBe(200);
    addOpenAI(sums['gpt-4o-mini'], (plain.body as { usage: OpenAIUsage }).usage);
    ids.push(plain.headers.get('x-request-id')!);

    const streamed = await post(`${t.url}/v1/chat/completions`, chat('gpt-4o-mini', 'Stream a haiku.', { stream: true, stream_options: { include_usage: true } }), t.key);
    const events = await readSse(streamed);
    const usageChunk = events.map((e) => (e.data === '[DONE]' ? undefined : (JSON.parse(e.data) as { usage?: OpenAIUsage }))).find((c) => c?.usage)!;
    addOpenAI(sums['gpt-4o-mini'], usageChunk.usage!);
    ids.push(streamed.headers.get('x-request-id')!);

    const anthropic = await postJson(`${t.url}/v1/messages`, chat('claude-haiku-4-5', 'Hello in Anthropic format'), t.key);
    expect(anthropic.status).toBe(200);
    const au = (anthropic.body as { usage: Record<string, number> }).usage;
    // Anthropic's input_tokens leave out cache reads and writes; the metric's input counts every prompt token.
    const claude = sums['claude-haiku-4-5'];
    claude.input += au.input_tokens! + au.cache_creation_input_tokens! + au.cache_read_input_tokens!;
    claude.cached_input += au.cache_read_input_tokens!;
    claude.output += au.output_tokens!;
    claude.micros += usd(au.cost_usd_total);
    ids.push(anthropic.headers.get('x-request-id')!);

    const emb = await postJson(`${t.url}/v1/embeddings`, { model: 'text-embedding-3-small', input: ['one road', 'two roads'] }, t.key);
    expect(emb.status).toBe(200);
    const eu = (emb.body as { usage: { prompt_tokens: number; cost: number } }).usage;
    sums['text-embedding-3-small'].input += eu.prompt_tokens;
    sums['text-embedding-3-small'].micros += usd(eu.cost);
    ids.push(emb.headers.get('x-request-id')!);

    const failed = await postJson(`${t.url}/v1/chat/completions`, chat('gpt-4o-mini', 'Fail please [[sim:status=500]]'), t.key);
    expect(failed.status).toBe(502);
    ids.push(failed.headers.get('x-request-id')!);
    const unknown = await postJson(`${t.url}/v1/chat/completions`, chat('made-up-model-x7', 'hi'), t.key);
    expect(unknown.status).toBe(404);
    ids.push(unknown.headers.get('x-request-id')!);

    const rows = await Promise.all(ids.map((id) => logRow(t, id))); // the row and the metrics are one event
    const after = await scrape(metricsUrl());
    const moved = (name: string, labels: Record<string, string> = {}): number => total(after.samples, name, labels) - total(before.samples, name, labels);

    for (const [model, sum] of Object.entries(sums)) {
      for (const type of ['input', 'output', 'cached_input', 'reasoning'] as const) {
        expect(moved('tollgate_tokens_total', { model, type }), `${model} ${type}`).toBe(sum[type]);
      }
      expect(Math.round(moved('tollgate_cost_usd_total', { model }) * 1e6), `${model} cost`).toBe(sum.micros);
    }
    const toldMicros = Object.values(sums).reduce((a, s) => a + s.micros, 0);
    expect(toldMicros).toBeGreaterThan(0);
    expect(Math.round(moved('tollgate_cost_usd_total') * 1e6)).toBe(toldMicros);
    await t.gateway.log.flush();
    expect(balanceBefore - (await t.balance(t.orgId))).toBe(toldMicros); // the metric adds up to the bill
    expect(rows.reduce((a, r) => a + r.costMicros, 0)).toBe(toldMicros);

    expect(moved('tollgate_requests_total', { route: '/v1/chat/completions', model: 'gpt-4o-mini', provider: 'openai', status: '200', code: 'none' })).toBe(2);
    expect(moved('tollgate_requests_total', { route: '/v1/messages', model: 'claude-haiku-4-5', provider: 'anthropic', status: '200' })).toBe(1);
    expect(moved('tollgate_requests_total', { route: '/v1/embeddings', status: '200' })).toBe(1);
    expect(moved('tollgate_requests_total', { model: 'gpt-4o-mini', status: '502', code: 'upstream_error' })).toBe(1);
    expect(moved('tollgate_requests_total', { model: 'unknown', provider: 'none', status: '404', code: 'model_not_found' })).toBe(1);
    expect(after.text).not.toContain('made-up-model-x7'); // a client's string never becomes a label value
    const failedRow = rows[4]!;
    expect(failedRow.attempts.map((a) => a.status)).toEqual([500, 500]);
    expect(moved('tollgate_upstream_errors_total', { provider: 'openai', code: '500' })).toBe(2);

    expect(moved('tollgate_request_duration_seconds_count')).toBe(6);
    expect(moved('tollgate_overhead_duration_seconds_count')).toBe(6);
    expect(moved('tollgate_upstream_duration_seconds_count')).toBe(5); // every request that reached a provider
    expect(moved('tollgate_time_to_first_token_seconds_count', { model: 'gpt-4o-mini', provider: 'openai' })).toBe(1);
    const overheadSum = moved('tollgate_overhead_duration_seconds_sum');
    expect(overheadSum).toBeGreaterThan(0);
    expect(overheadSum).toBeLessThan(moved('tollgate_request_duration_seconds_sum'));

    expect(total(after.samples, 'tollgate_reservations_in_flight')).toBe(0);
    expect(total(after.samples, 'tollgate_reserved_usd')).toBe(0);
    expect(after.samples.some((s) => s.name === 'tollgate_request_log_queue_depth')).toBe(true);
    expect(after.text).toContain('# TYPE tollgate_ratelimit_rejections_total counter');
    expect(after.samples.some((s) => s.name === 'process_cpu_user_seconds_total')).toBe(true);
    expect(after.samples.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('counts a stream broken by the upstream as its bill says, and as an upstream error', async () => {
    const before = await scrape(metricsUrl());
    const res = await post(`${t.url}/v1/chat/completions`, chat('gpt-4o-mini', 'Break it [[sim:drop_mid_stream]] [[sim:tokens=20]]', { stream: true }), t.key);
    await readSse(res).catch(() => []);
    const row = await logRow(t, res.headers.get('x-request-id')!);
    const after = await scrape(metricsUrl());
    const moved = (name: string, labels: Record<string, string> = {}): number => total(after.samples, name, labels) - total(before.samples, name, labels);
    expect(row.errorCode).toBe('upstream_error');
    expect(row.costMicros).toBeGreaterThan(0); // billed for the prompt and what was delivered
    expect(Math.round(moved('tollgate_cost_usd_total') * 1e6)).toBe(row.costMicros);
    const billed = row.extra?.usage as { prompt_tokens: number; completion_tokens: number };
    expect(moved('tollgate_tokens_total', { type: 'input' })).toBe(billed.prompt_tokens);
    expect(moved('tollgate_tokens_total', { type: 'output' })).toBe(billed.completion_tokens);
    expect(moved('tollgate_upstream_errors_total', { provider: 'openai', code: 'broken_reply' })).toBe(1);
  });

  it('serves /metrics on its own listener only, in the Prometheus text format', async () => {
    const m = await scrape(metricsUrl());
    expect(m.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(new URL(metricsUrl()).port).not.toBe(new URL(t.url).port);
    expect((await fetch(`${t.url}/metrics`)).status).toBe(404);
    expect((await fetch(metricsUrl().replace(/\/metrics$/, '/other'))).status).toBe(404);
    expect((await fetch(metricsUrl(), { method: 'POST' })).status).toBe(405);
  });
});

describe('OpenTelemetry traces', () => {
  const spansOf = (traceId: string): ReceivedSpan[] => receiver!.spans.filter((s) => s.traceId === traceId);

  it('continues the caller\'s trace: a span named for the operation and model, GenAI attributes, and one child span per attempt, each propagated upstream', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    t.sim.resetCalls();
    const fallbacksBefore = total((await scrape(metricsUrl())).samples, 'tollgate_fallbacks_total', { from_provider: 'anthropic', to_provider: 'backup' });
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('claude-haiku-4-5', 'Hi [[sim@anthropic:status=500]]'), t.key, { traceparent: `00-${traceId}-${parentId}-01` });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-request-id')!;
    const row = await logRow(t, id);
    const spans = await eventually('the request span', () => {
      const all = spansOf(traceId);
      return all.length >= 4 ? all : undefined;
    });
    const root = spans.find((s) => s.attributes['tollgate.request_id'] === id)!;
    expect(root).toMatchObject({ name: 'chat claude-haiku-4-5', parentSpanId: parentId, kind: 2 /* SERVER */ });
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'claude-haiku-4-5', 'gen_ai.provider.name': 'backup',
      'gen_ai.response.model': 'claude-haiku-4-5-20251001', 'http.route': '/v1/chat/completions', 'http.response.status_code': 200,
      'tollgate.cost_micros': row.costMicros, 'tollgate.cost_usd': row.costMicros / 1e6, 'tollgate.attempts': 3,
    });
    const usage = (r.body as { usage: OpenAIUsage }).usage;
    expect(root.attributes['gen_ai.usage.input_tokens']).toBe(usage.prompt_tokens);
    expect(root.attributes['gen_ai.usage.output_tokens']).toBe(usage.completion_tokens);
    expect(root.attributes['tollgate.prompt']).toBeUndefined(); // no prompt text unless configured and the org's retention allows it
    expect(root.resource['service.name']).toBe('tollgate');

    const attempts = spans.filter((s) => s.parentSpanId === root.spanId);
    expect(attempts.map((s) => [s.name, s.attributes['tollgate.provider'], s.attributes['http.response.status_code'], s.kind])).toEqual([
      ['chat claude-haiku-4-5-20251001', 'anthropic', 500, 3 /* CLIENT */],
      ['chat claude-haiku-4-5-20251001', 'anthropic', 500, 3],
      ['chat claude-haiku-4-5-20251001', 'backup', 200, 3],
    ]);
    expect(attempts.slice(0, 2).map((s) => s.status.code)).toEqual([2, 2]); // ERROR
    // Every upstream call carried the trace, with its own attempt span as parent.
    const seen = t.sim.traceparents().filter((x) => x.traceparent.includes(traceId));
    expect(seen.map((x) => x.route)).toEqual(['POST /anthropic/v1/messages', 'POST /anthropic/v1/messages', 'POST /backup/v1/messages']);
    expect(seen.map((x) => x.traceparent)).toEqual(attempts.map((s) => `00-${traceId}-${s.spanId}-01`));
    expect(receiver!.requests.every((q) => q.path === '/v1/traces' && q.contentType === 'application/json')).toBe(true);
    expect(total((await scrape(metricsUrl())).samples, 'tollgate_fallbacks_total', { from_provider: 'anthropic', to_provider: 'backup' }) - fallbacksBefore).toBe(1);
  });

  it('starts a new trace without a traceparent; a stream\'s span carries its time to the first chunk', async () => {
    const res = await post(`${t.url}/v1/chat/completions`, chat('gpt-4o-mini', 'Stream it', { stream: true }), t.key);
    await readSse(res);
    const id = res.headers.get('x-request-id')!;
    const row = await logRow(t, id);
    const span = await eventually('the stream span', () => receiver!.spans.find((s) => s.attributes['tollgate.request_id'] === id));
    expect(span.parentSpanId).toBe('');
    expect(span.name).toBe('chat gpt-4o-mini');
    expect(span.attributes['gen_ai.request.stream']).toBe(true);
    // The log keeps whole milliseconds; the span keeps the same measurement unrounded.
    expect(Math.abs(Number(span.attributes['gen_ai.response.time_to_first_chunk']) - row.ttfbMs! / 1000)).toBeLessThanOrEqual(0.001);
  });

  it('names the span of a model the catalog does not know by the operation alone, with the error type', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('no-such-model-q', 'hi'), t.key);
    const id = r.headers.get('x-request-id')!;
    const span = await eventually('the 404 span', () => receiver!.spans.find((s) => s.attributes['tollgate.request_id'] === id));
    expect(span.name).toBe('chat');
    expect(span.attributes).toMatchObject({ 'error.type': 'model_not_found', 'http.response.status_code': 404 });
  });
});

describe('the server log', () => {
  const lines: Array<Record<string, unknown>> = [];
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const g = useOrgGateway('logged', '0.000001', { yaml: { log: { level: 'info' } }, logStream });

  it('carries the req_ id on every line about a request, and the error code on a failed request\'s line', async () => {
    const ok = await fetch(`${g.url}/v1/models`, { headers: { authorization: `Bearer ${g.key}` } });
    const poor = await postJson(`${g.url}/v1/chat/completions`, chat('gpt-4o-mini', 'costly'), g.key);
    expect(poor.status).toBe(402);
    const ids = [ok.headers.get('x-request-id')!, poor.headers.get('x-request-id')!];
    await logRow(g, ids[1]!);
    const completed = await eventually('both completion lines', () => {
      const done = lines.filter((l) => l.msg === 'request completed' && ids.includes(l.reqId as string));
      return done.length === 2 ? done : undefined;
    });
    const aboutRequests = lines.filter((l) => 'req' in l || 'res' in l);
    expect(aboutRequests.length).toBeGreaterThanOrEqual(4);
    for (const l of aboutRequests) expect(l.reqId).toMatch(/^req_/);
    expect(completed.find((l) => l.reqId === ids[1])!.res).toEqual({ statusCode: 402, code: 'insufficient_credits' });
    expect(completed.find((l) => l.reqId === ids[0])!.res).toEqual({ statusCode: 200 });
  });
});

describe('prompt text in spans', () => {
  const g = useOrgGateway('keeps-logs', '5', () => ({ yaml: { telemetry: { otlp: { endpoint: receiver!.url, include_prompts: true } } } }));

  it('with include_prompts, only for an org whose retention keeps its logs', async () => {
    const { key: noneKey } = await g.org('keeps-nothing', '5', 'none');
    const standard = await postJson(`${g.url}/v1/chat/completions`, chat('gpt-4o-mini', 'a standard prompt'), g.key);
    const none = await postJson(`${g.url}/v1/chat/completions`, chat('gpt-4o-mini', 'a private prompt'), noneKey);
    const spanOf = (r: { headers: Headers }) => eventually('its span', () => receiver!.spans.find((s) => s.attributes['tollgate.request_id'] === r.headers.get('x-request-id')));
    expect((await spanOf(standard)).attributes['tollgate.prompt']).toBe('a standard prompt');
    expect((await spanOf(none)).attributes['tollgate.prompt']).toBeUndefined();
    expect(JSON.stringify(receiver!.spans)).not.toContain('a private prompt');
  });
});
