import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newExchange } from '../pipeline/exchange.js';
import type { ModelRoute } from '../providers/types.js';
import type { LogRow } from '../store/types.js';
import { Tracing } from './tracing.js';

/** Names of the spans a local OTLP/HTTP JSON endpoint received. */
const received: string[] = [];
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString('utf8')));
  req.on('end', () => {
    const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> };
    for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans) received.push(s.name);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
let endpoint = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const route = { provider: { id: 'openai', baseUrl: 'http://127.0.0.1:1/v1' }, model: { id: 'm', upstreamId: 'm-up', modality: 'chat' } } as unknown as ModelRoute;

/** One served request through a trace; returns the traceparent its upstream call carried. */
function serve(tracing: Tracing, id: string, headers: Record<string, string> = {}): string {
  const ex = newExchange(id, 'chat', 0);
  ex.requestedModel = 'm';
  ex.route = route;
  const trace = tracing.startRequest('POST', headers);
  const upstream = trace.attemptStart(ex, route);
  ex.attempts.push({ provider: 'openai', model: 'm-up', status: 200, error: null, durationMs: 1 });
  trace.attemptEnd(ex.attempts[0], undefined);
  const row = { requestId: id, orgId: null, status: 200, errorCode: null, costMicros: 0, costEstimated: false, byok: false, ttfbMs: null, prompt: null, attempts: ex.attempts } as unknown as LogRow;
  trace.end(ex, row, '/v1/chat/completions', true);
  return upstream.traceparent ?? '';
}

describe('Tracing sample_ratio', () => {
  it('at 0 records no trace it starts, still propagates one upstream, and follows a caller that sampled its own', async () => {
    const tracing = new Tracing({ endpoint, headers: {}, includePrompts: false, serviceName: 't', sampleRatio: 0 }, '0.0.0');
    expect(serve(tracing, 'req_a')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    const caller = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(serve(tracing, 'req_b', { traceparent: caller })).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    await tracing.close();
    expect(received.sort()).toEqual(['chat m', 'chat m-up']); // only the caller-sampled request and its attempt
  });

  it('at 1 records every trace', async () => {
    received.length = 0;
    const tracing = new Tracing({ endpoint, headers: {}, includePrompts: false, serviceName: 't', sampleRatio: 1 }, '0.0.0');
    expect(serve(tracing, 'req_c')).toMatch(/-01$/);
    await tracing.close();
    expect(received.sort()).toEqual(['chat m', 'chat m-up']);
  });
});
