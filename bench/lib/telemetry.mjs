// The cost of observability: the same gateway three times — telemetry off (the default),
// Prometheus metrics on (scraped every second), metrics plus OpenTelemetry traces exported
// to a local OTLP sink — each its own process on its own SQLite file. The machine is shared
// (other processes come and go), so a configuration is never compared with a run taken at
// another moment: each round loads "off" and one other configuration at the same time, 32
// connections each, and reports the ratio of what they served side by side (both see the
// same contention; the one with more work per request gets fewer requests through). A
// control pair (off beside another off) shows how far the method itself is from 1. Also
// checks that the metrics counted every request and the sink received every span.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmt, requestOnce, runAutocannon, sleep } from './load.mjs';
import { observerCost } from './observer-cost.mjs';
import { profiledShare } from './telemetry-profile.mjs';
import { Child, CpuMeter, gatewayArgs, RssSampler } from './procs.mjs';

const CONNECTIONS = 32;
const SCRAPE_EVERY_MS = 1000;
/** Spans per request: the request's own and its one upstream attempt's. */
const SPANS_PER_REQUEST = 2;

const CONFIGS = [
  { name: 'off', label: 'telemetry off (default)', extra: () => ({}) },
  // The control: a second gateway with telemetry off. Its ratio to the first is the method's noise floor.
  { name: 'control', label: 'control: telemetry off too', extra: () => ({}) },
  { name: 'metrics', label: `metrics on (scraped every ${SCRAPE_EVERY_MS / 1000} s)`, extra: () => ({ metrics: { host: '127.0.0.1', port: 0 } }) },
  { name: 'traces', label: 'metrics + traces (OTLP/HTTP to a local sink)', extra: (sinkUrl) => ({ metrics: { host: '127.0.0.1', port: 0 }, telemetry: { otlp: { endpoint: sinkUrl } } }) },
];

/** The scrape URL a gateway printed after its "listening on" line. */
async function metricsUrlOf(child) {
  for (let i = 0; i < 100; i++) {
    const line = child.output.find((l) => l.startsWith('Prometheus metrics on '));
    if (line) return line.slice('Prometheus metrics on '.length).trim();
    await sleep(20);
  }
  throw new Error(`${child.name} printed no metrics URL:\n${child.tail()}`);
}

/** Scrapes /metrics every second while a run lasts, as Prometheus would (more often than its 15 s default). */
function scraper(url) {
  let scrapes = 0;
  let failures = 0;
  const timer = setInterval(() => {
    fetch(url).then((r) => r.text().then(() => (r.ok ? scrapes++ : failures++)), () => failures++);
  }, SCRAPE_EVERY_MS);
  return {
    stop: () => {
      clearInterval(timer);
      return { scrapes, failures };
    },
  };
}

/** Requests the gateway counted: with status 200, and in all (a request the client gave up on is a 499). */
async function requestsCounted(url) {
  const text = await (await fetch(url)).text();
  let ok = 0;
  let all = 0;
  for (const m of text.matchAll(/^tollgate_requests_total\{([^}]*)\} (\S+)$/gm)) {
    all += Number(m[2]);
    if (m[1].includes('status="200"')) ok += Number(m[2]);
  }
  return { ok, all };
}

/** Loads two gateways at once for `durationS`; each one's throughput, latency, CPU per request and peak RSS. */
async function measuredPair(pair, ctx) {
  for (const s of pair) s.child.resetPeak();
  const sampler = new RssSampler(pair.map((s) => s.child), 100);
  const cpu = new CpuMeter(ctx.allChildren);
  const scrapes = pair.filter((s) => s.metricsUrl).map((s) => scraper(s.metricsUrl));
  const runs = await Promise.all(pair.map((s) => runAutocannon({ url: `${s.child.url}/v1/chat/completions`, headers: s.headers, body: ctx.body, connections: CONNECTIONS, durationS: ctx.durationS })));
  const usage = cpu.stop();
  const scraped = scrapes.map((x) => x.stop());
  const peaks = sampler.stop();
  return pair.map((s, i) => {
    const r = runs[i];
    return { ...r, scrapes: s.metricsUrl ? scraped.shift() : undefined, cpuUsPerReq: r.requests > 0 ? (usage.cpuMsByChild[s.child.name] * 1000) / r.requests : NaN, peakRssMb: Math.max(s.child.memory().hwmMb || 0, peaks.get(s.child.name)) };
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Starts one gateway process per configuration, each on its own SQLite file with an org and a key, and warms it up. */
async function startServers(ctx, sinkUrl, track) {
  const servers = [];
  for (const c of CONFIGS) {
    const file = join(ctx.tmp, `gateway-telemetry-${c.name}.yaml`);
    const extra = c.extra(sinkUrl);
    writeFileSync(file, JSON.stringify({ ...ctx.baseConfig, database: { url: `sqlite:${join(ctx.tmp, `gateway-telemetry-${c.name}.db`)}` }, ...extra }, null, 2));
    const key = ctx.keyFor(file);
    const child = track(await Child.start({
      name: `gw-${c.name}`, args: gatewayArgs(ctx.root, file), cwd: ctx.root, ready: /listening on (http:\/\/\S+)/,
    }));
    const metricsUrl = extra.metrics ? await metricsUrlOf(child) : undefined;
    servers.push({ ...c, child, metricsUrl, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, sent: 0 });
  }
  ctx.say(`telemetry: gateways ${servers.map((s) => `${s.name} ${s.child.url}`).join(', ')}; traces → sink ${sinkUrl}; warm-up ${ctx.warmupS} s each`);
  for (const s of servers) {
    const probe = await requestOnce({ url: s.child.url, path: '/v1/chat/completions', headers: s.headers, body: ctx.body });
    if (probe.status !== 200) throw new Error(`${s.name}: chat gave ${probe.status}: ${probe.text.slice(0, 200)}`);
    const w = await runAutocannon({ url: `${s.child.url}/v1/chat/completions`, headers: s.headers, body: ctx.body, connections: CONNECTIONS, durationS: ctx.warmupS, collectLatencies: false });
    s.sent += 1 + w.requests;
  }
  return servers;
}

/**
 * Runs the scenario; `ctx` carries what bench/run.mjs set up: root, tmp, baseConfig,
 * body, durationS, warmupS, rounds, say, allChildren, keyFor(configFile).
 */
export async function telemetryScenario(ctx, results) {
  const { say } = ctx;
  const started = [];
  const track = (child) => {
    started.push(child);
    ctx.allChildren.push(child);
    return child;
  };
  try {
    const sink = track(await Child.start({ name: 'otlp-sink', args: [join(ctx.root, 'bench', 'otlp-sink.mjs')], cwd: ctx.root, ready: /listening on (http:\/\/\S+)/ }));
    const servers = await startServers(ctx, sink.url, track);
    const [off, ...others] = servers;
    const pairs = Object.fromEntries(others.map((s) => [s.name, []]));
    for (let round = 1; round <= ctx.rounds; round++) {
      for (const s of others) {
        await sleep(500);
        // Which of the two the load generator starts first alternates between rounds.
        const [a, b] = round % 2 ? await measuredPair([off, s], ctx) : (await measuredPair([s, off], ctx)).reverse();
        off.sent += a.requests;
        s.sent += b.requests;
        const ratio = { rps: b.rps / a.rps, p99: b.latency.p99 / a.latency.p99, cpuUsPerReq: b.cpuUsPerReq / a.cpuUsPerReq };
        pairs[s.name].push({ off: a, on: b, ratio });
        const bad = [a, b].some((x) => x.non2xx + x.errors > 0) ? `  !! non-2xx/errors: off ${a.non2xx}/${a.errors}, ${s.name} ${b.non2xx}/${b.errors}` : '';
        say(`telemetry ${s.name.padEnd(7)} ‖ off: ${fmt(b.rps, 0)} ‖ ${fmt(a.rps, 0)} req/s (${fmt(ratio.rps)}×), p99 ${fmt(b.latency.p99)} ‖ ${fmt(a.latency.p99)} ms, `
          + `CPU ${fmt(b.cpuUsPerReq, 0)} ‖ ${fmt(a.cpuUsPerReq, 0)} µs/req (${fmt(ratio.cpuUsPerReq)}×)${b.scrapes ? `, ${b.scrapes.scrapes} scrapes` : ''}${bad}`);
      }
    }
    await sleep(1000); // requests the load generator abandoned at the end of the last run finish and are logged
    const counted = {};
    for (const s of servers.filter((x) => x.metricsUrl)) counted[s.name] = { sent: s.sent, ...(await requestsCounted(s.metricsUrl)) };
    const traced = servers.find((s) => s.name === 'traces');
    await traced.child.stop(30_000); // close() exports the spans still buffered
    const sinkCount = await (await fetch(`${sink.url}/count`)).json();
    const inProcess = await observerCost(ctx.root, sink.url);
    const profiled = {};
    for (const c of CONFIGS.filter((x) => x.name === 'metrics' || x.name === 'traces')) {
      profiled[c.name] = await profiledShare(ctx, c.name, c.extra(sink.url), SCRAPE_EVERY_MS);
      say(`telemetry: ${c.name} under --cpu-prof: ${fmt(100 * profiled[c.name].share, 1)} % of the gateway's busy CPU is telemetry code (→ ≈ ${fmt(1 - profiled[c.name].share)}× throughput)`);
    }
    const summary = (rounds) => ({
      rps: median(rounds.map((r) => r.ratio.rps)), p99: median(rounds.map((r) => r.ratio.p99)), cpuUsPerReq: median(rounds.map((r) => r.ratio.cpuUsPerReq)),
    });
    results.telemetry = {
      connections: CONNECTIONS, durationS: ctx.durationS, rounds: ctx.rounds, scrapeEveryMs: SCRAPE_EVERY_MS,
      labels: Object.fromEntries(CONFIGS.map((c) => [c.name, c.label])),
      pairs: Object.fromEntries(Object.entries(pairs).map(([k, rounds]) => [k, { median: summary(rounds), rounds }])),
      inProcessCpuUsPerReq: inProcess, profiled, counted, spans: { received: sinkCount.spans, requestSpans: sinkCount.requestSpans, exports: sinkCount.exports, expected: SPANS_PER_REQUEST * counted.traces.all },
    };
    const t = results.telemetry;
    say(`telemetry: throughput beside off (median of ${ctx.rounds}): control ${fmt(t.pairs.control.median.rps)}×, metrics ${fmt(t.pairs.metrics.median.rps)}×, metrics + traces ${fmt(t.pairs.traces.median.rps)}×; `
      + `observer CPU per request in-process: metrics ${fmt(inProcess.metrics, 1)} µs, metrics + traces ${fmt(inProcess.traces, 1)} µs (${fmt(inProcess.traces10, 1)} µs at 10 % sampling); `
      + `metrics counted ${Object.entries(counted).map(([k, v]) => `${k} ${v.ok} ok of ${v.all} for ${v.sent} replies`).join(', ')}; sink received ${sinkCount.spans}/${t.spans.expected} spans (${sinkCount.requestSpans} request spans for ${counted.traces.all} requests counted)`);
  } finally {
    for (const c of started.reverse()) {
      ctx.allChildren.splice(ctx.allChildren.indexOf(c), 1);
      await c.stop();
    }
  }
}

const f0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '—');
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
const times = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '—');

/** The markdown of the scenario: per configuration, each round side by side with telemetry off, and the median ratios. */
export function telemetryMarkdown(t) {
  const lines = [
    `Non-streamed chat, three gateway processes alike but for telemetry. Each round loads the gateway with telemetry off and one other configuration at the same time, ${t.connections} connections each, for ${t.durationS} s, `
      + 'so both see the same contention on the shared machine; the ratios compare what they served side by side (median of the rounds).',
    '',
    '| configuration | round | req/s (off) | p99 ms (off) | server CPU µs/req (off) | peak RSS MB | req/s ÷ off | p99 ÷ off | CPU/req ÷ off |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [name, p] of Object.entries(t.pairs)) {
    p.rounds.forEach((r, i) => {
      lines.push(`| ${t.labels[name]} | ${i + 1} | ${f0(r.on.rps)} (${f0(r.off.rps)}) | ${f2(r.on.latency.p99)} (${f2(r.off.latency.p99)}) | ${f0(r.on.cpuUsPerReq)} (${f0(r.off.cpuUsPerReq)}) | ${f0(r.on.peakRssMb)} (${f0(r.off.peakRssMb)}) | ${times(r.ratio.rps)} | ${times(r.ratio.p99)} | ${times(r.ratio.cpuUsPerReq)} |`);
    });
    lines.push(`| **${t.labels[name]}** | median | | | | | **${times(p.median.rps)}** | ${times(p.median.p99)} | ${times(p.median.cpuUsPerReq)} |`);
  }
  if (t.profiled) {
    lines.push('', 'Share of the gateway\'s own CPU spent in telemetry code (src/telemetry, prom-client, @opentelemetry), from a CPU profile of each configuration under 32 connections, scraped as above; '
      + 'a share of one process\'s own samples hardly moves with the machine\'s other users, and removing work that takes a share f leaves 1 − f of the CPU per request, so on ÷ off ≈ 1 − f:', '',
      '| configuration | telemetry share of busy CPU | implied throughput ÷ off |', '|---|---:|---:|',
      ...Object.entries(t.profiled).map(([k, p]) => `| ${t.labels[k]} | ${f1(100 * p.share)} % | ${times(1 - p.share)} |`));
  }
  if (t.inProcessCpuUsPerReq) {
    lines.push('', `CPU the telemetry adds to a request, measured in-process on the built observer (the calls the pipeline makes for a served chat request, median of 5 rounds; steadier than throughput on a shared machine): `
      + `metrics ${f1(t.inProcessCpuUsPerReq.metrics)} µs, metrics + traces ${f1(t.inProcessCpuUsPerReq.traces)} µs (export to the sink included), `
      + `metrics + traces at \`sample_ratio: 0.1\` ${f1(t.inProcessCpuUsPerReq.traces10)} µs. `
      + `For scale, the server CPU per request with telemetry off is in the table above.`);
  }
  const counted = Object.entries(t.counted).map(([k, v]) => `${k}: \`tollgate_requests_total\` ${f0(v.ok)} with status 200 (${f0(v.all)} in all) for ${f0(v.sent)} 200 replies the load generator received`).join('; ');
  lines.push('', `Checks: ${counted}; the OTLP sink received ${f0(t.spans.received)} spans in ${f0(t.spans.exports)} exports, ${f0(t.spans.expected)} expected (2 per request the traced gateway counted), of which ${f0(t.spans.requestSpans)} request spans for ${f0(t.counted.traces?.all)} requests counted.`
    + ' A request the load generator abandons at the end of a run is still answered and counted by the gateway (as 200, or 499 when the connection went first), so the gateway counts a few more than the client received.');
  return lines.join('\n');
}

/** The scenario's target: metrics cost at most 5 % of throughput. */
export function telemetryTarget(t) {
  const side = t ? t.pairs.metrics.median.rps : NaN;
  const implied = t?.profiled?.metrics ? 1 - t.profiled.metrics.share : NaN;
  const measured = t ? `${times(side)} side by side (control ${times(t.pairs.control?.median.rps)}); ${times(implied)} from the profile` : 'not run';
  // Judged by the profile when there is one: the side-by-side figure is as far from 1 as the control is on a busy machine.
  const r = Number.isFinite(implied) ? implied : side;
  return { goal: 'chat, 32 conns: throughput with metrics on ≥ 0.95 × off', measured, met: Number.isFinite(r) ? r >= 0.95 : null };
}
