import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../lib/paths.js';
import { codeLabel } from './labels.js';
import { type FinishedRequest, GatewayMetrics } from './metrics.js';
import { MetricsServer } from './metrics-server.js';

const sources = { requestLogDepth: () => 7, requestsInFlight: () => 3 };

function finished(over: Partial<FinishedRequest> = {}): FinishedRequest {
  return {
    route: '/v1/chat/completions', model: 'gpt-4o-mini', provider: 'openai', status: '200', code: 'none', durationS: 0.05, upstreamS: 0.04,
    ttftS: undefined, usage: { input: 10, output: 5, cachedInput: 0, reasoning: 0 }, costMicros: 100_000, byok: false, ...over,
  };
}

/** The value of the one sample line starting with `prefix`. */
function sample(text: string, prefix: string): string | undefined {
  return text.split('\n').find((l) => l.startsWith(prefix))?.slice(prefix.length).trim();
}

describe('GatewayMetrics', () => {
  it('sums costs in integer micro-USD and shows USD exactly (no float drift)', async () => {
    const m = new GatewayMetrics(sources);
    m.requestFinished(finished({ costMicros: 100_000 }));
    m.requestFinished(finished({ costMicros: 200_000 }));
    for (let i = 0; i < 3; i++) m.requestFinished(finished({ model: 'tiny', costMicros: 1 }));
    const { body } = await m.scrape();
    // 0.1 + 0.2 in floating point is 0.30000000000000004; the counter says 0.3.
    expect(sample(body, 'tollgate_cost_usd_total{model="gpt-4o-mini",provider="openai"}')).toBe('0.3');
    expect(sample(body, 'tollgate_cost_usd_total{model="tiny",provider="openai"}')).toBe('0.000003');
    // A second scrape shows the same totals (the USD view is rebuilt from the micro-USD sums, not added again).
    expect(sample((await m.scrape()).body, 'tollgate_cost_usd_total{model="gpt-4o-mini",provider="openai"}')).toBe('0.3');
  });

  it('counts tokens by type, only the types a request had, and BYOK cost apart', async () => {
    const m = new GatewayMetrics(sources);
    m.requestFinished(finished({ usage: { input: 100, output: 50, cachedInput: 60, reasoning: 20 }, byok: true, costMicros: 42 }));
    m.requestFinished(finished({ usage: undefined, costMicros: 0, status: '404', code: 'model_not_found', model: 'unknown', provider: 'none', upstreamS: 0 }));
    const { body } = await m.scrape();
    const tokens = (type: string): string | undefined => sample(body, `tollgate_tokens_total{model="gpt-4o-mini",provider="openai",type="${type}"}`);
    expect([tokens('input'), tokens('output'), tokens('cached_input'), tokens('reasoning')]).toEqual(['100', '50', '60', '20']);
    expect(sample(body, 'tollgate_byok_cost_usd_total{model="gpt-4o-mini",provider="openai"}')).toBe('0.000042');
    expect(body).not.toContain('tollgate_cost_usd_total{model="unknown"');
    expect(sample(body, 'tollgate_requests_total{route="/v1/chat/completions",model="unknown",provider="none",status="404",code="model_not_found"}')).toBe('1');
    // Upstream time is observed only for requests that reached a provider; overhead for every request.
    expect(sample(body, 'tollgate_upstream_duration_seconds_count{model="gpt-4o-mini",provider="openai"}')).toBe('1');
    expect(sample(body, 'tollgate_overhead_duration_seconds_count{route="/v1/chat/completions"}')).toBe('2');
  });

  it('reads its gauges from the gateway at scrape time, and tracks reservations in flight', async () => {
    const m = new GatewayMetrics(sources);
    m.creditReserved(1500);
    m.creditReserved(500);
    m.creditSettled(500);
    m.rateLimitRejected('rpm', 'key');
    const { body, contentType } = await m.scrape();
    expect(contentType).toMatch(/^text\/plain/);
    expect(sample(body, 'tollgate_request_log_queue_depth')).toBe('7');
    expect(sample(body, 'tollgate_requests_in_flight')).toBe('3');
    expect(sample(body, 'tollgate_reservations_in_flight')).toBe('1');
    expect(sample(body, 'tollgate_reserved_usd')).toBe('0.0015');
    expect(sample(body, 'tollgate_ratelimit_rejections_total{kind="rpm",scope="key"}')).toBe('1');
  });
});

describe('MetricsServer', () => {
  it('serves GET /metrics only, and says which setting to change when its port is taken', async () => {
    const metrics = new GatewayMetrics(sources);
    const a = new MetricsServer(metrics, '127.0.0.1');
    const url = await a.listen(0);
    try {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('tollgate_request_log_queue_depth 7');
      expect((await fetch(url.replace('/metrics', '/'))).status).toBe(404);
      const port = Number(new URL(url).port);
      await expect(new MetricsServer(metrics, '127.0.0.1').listen(port)).rejects.toThrow(`the metrics listener (metrics.host, metrics.port in gateway.yaml) cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`);
    } finally {
      await a.close();
    }
  });
});

describe('codeLabel', () => {
  it.each([[null, 'none'], ['insufficient_credits', 'insufficient_credits'], ['some plugin typo', 'other'], ['__proto__', 'other']])('%s → %s', (code, label) => {
    expect(codeLabel(code)).toBe(label);
  });
});

describe('the metrics, the docs and the dashboard agree', () => {
  // Every metric the gateway serves: the routing metrics join the registry when the gateway wires its router (metrics.routing).
  const all = new GatewayMetrics(sources);
  all.routing({ deployments: () => [] });
  const names = all.registry.getMetricsAsArray().map((m) => m.name).filter((n) => n.startsWith('tollgate_')).sort();
  const read = (file: string): string => readFileSync(join(packageRoot(), file), 'utf8');

  it('docs/observability.md has a row for every tollgate_ metric, and no row for one that does not exist', () => {
    const documented = [...read('docs/observability.md').matchAll(/^\| `(tollgate_[a-z_]+)` \|/gm)].map((m) => m[1]).sort();
    expect(names.length).toBeGreaterThan(10);
    expect(documented).toEqual(names);
  });

  it('examples/grafana-dashboard.json queries only metrics that exist', () => {
    const used = new Set([...read('examples/grafana-dashboard.json').matchAll(/tollgate_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((n) => !names.includes(n))).toEqual([]);
  });
});
