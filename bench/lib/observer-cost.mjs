// The CPU the telemetry adds to one request, measured in this process on the built
// observer (dist/src/telemetry): the calls the pipeline makes for a served chat request,
// with metrics on, and with metrics plus traces exported to the OTLP sink — minus the same
// loop without them. Steadier than throughput on a shared machine: it is one process's own
// CPU time, and the median of several rounds.
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from './load.mjs';


/** µs of CPU per request: { metrics, traces, traces10 } (metrics + traces, export included; traces10 at sample_ratio 0.1). */
export async function observerCost(root, sinkUrl, rounds = 5) {
  const dist = (p) => pathToFileURL(join(root, 'dist', 'src', p)).href;
  const { Telemetry } = await import(dist('telemetry/index.js'));
  const { newExchange } = await import(dist('pipeline/exchange.js'));
  const route = { provider: { id: 'openai', baseUrl: 'http://127.0.0.1:1/openai/v1' }, model: { id: 'gpt-4o-mini', upstreamId: 'gpt-4o-mini', modality: 'chat' } };
  const request = { routeOptions: { url: '/v1/chat/completions' }, method: 'POST', headers: {} };
  const sources = { requestLogDepth: () => 0, requestsInFlight: () => 0 };
  const catalog = { routesFor: () => [] };
  const exchange = (i) => {
    const ex = newExchange(`req_${i}`, 'chat', 0);
    ex.requestedModel = 'gpt-4o-mini';
    ex.reservedMicros = 100;
    return ex;
  };
  const attempt = (ex) => ex.attempts.push({ provider: 'openai', model: 'gpt-4o-mini', status: 200, error: null, durationMs: 1 });
  const served = (t, i) => {
    const ex = exchange(i);
    t.onRequestStart(ex, request);
    t.onCreditReserved(ex);
    ex.route = route;
    t.onAttemptStart(ex, route);
    attempt(ex);
    const body = new EventEmitter();
    t.onAttemptEnd(ex, undefined, body);
    body.emit('close');
    ex.usage = { input: 20, output: 8, cachedInput: 0, reasoning: 0 };
    t.onCreditSettled(ex);
    t.onRequestEnd(ex, { requestId: ex.id, orgId: 'org_1', modality: 'chat', status: 200, errorCode: null, costMicros: 7, costEstimated: false, byok: false, durationMs: 3, ttfbMs: 2, prompt: null, attempts: ex.attempts });
  };
  const bare = (i) => {
    const ex = exchange(i);
    attempt(ex);
    new EventEmitter().emit('close');
  };
  // 4,000 requests a round: 8,000 spans fit the batch processor's queue, and close() exports them inside the measured time.
  const N = 4000;
  const cpuOf = async (setup) => {
    const c0 = process.cpuUsage();
    const t = await setup();
    for (let i = 0; i < N; i++) (t ? served(t, i) : bare(i));
    await t?.close();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / N;
  };
  const configs = {
    none: async () => undefined,
    metrics: () => Telemetry.create({ metrics: { host: '127.0.0.1', port: 0 }, telemetry: { otlp: undefined } }, catalog, sources),
    traces: () => Telemetry.create({ metrics: { host: '127.0.0.1', port: 0 }, telemetry: { otlp: { endpoint: sinkUrl, headers: {}, includePrompts: false, serviceName: 'bench', sampleRatio: 1 } } }, catalog, sources),
    traces10: () => Telemetry.create({ metrics: { host: '127.0.0.1', port: 0 }, telemetry: { otlp: { endpoint: sinkUrl, headers: {}, includePrompts: false, serviceName: 'bench', sampleRatio: 0.1 } } }, catalog, sources),
  };
  const runs = { none: [], metrics: [], traces: [], traces10: [] };
  for (let r = 0; r < rounds + 1; r++) {
    for (const [name, setup] of Object.entries(configs)) {
      const us = await cpuOf(setup);
      if (r > 0) runs[name].push(us); // round 0 warms the JIT
    }
  }
  const none = median(runs.none);
  return { metrics: median(runs.metrics) - none, traces: median(runs.traces) - none, traces10: median(runs.traces10) - none };
}
