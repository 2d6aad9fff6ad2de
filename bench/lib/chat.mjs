// The chat-traffic scenarios of `npm run bench` (bench/run.mjs): the sanity check of each
// server, chat and streamed chat at each concurrency (best of ROUNDS), and the soak.
// `ctx` is the run's: { say, allChildren } (every server process, for the CPU breakdown).
import { fmt, requestOnce, runAutocannon, runStreams, sleep } from './load.mjs';
import { CpuMeter, cpuMsOfCommand, RssSampler } from './procs.mjs';
import { CONNECTIONS, DURATION_S, ROUNDS, SOAK_S, STREAM_CONCURRENCY, STREAM_S, WARMUP_S } from './options.mjs';

const CHAT_BODY = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are a concise assistant.' },
    { role: 'user', content: 'Write one sentence about toll roads.' },
  ],
  max_tokens: 64,
};
export const CHAT_JSON = JSON.stringify(CHAT_BODY);
export const STREAM_JSON = JSON.stringify({ ...CHAT_BODY, stream: true, stream_options: { include_usage: true } });

/** One non-streamed and one streamed chat through `target`: throws unless both come back whole. */
export async function sanity(target) {
  const plain = await requestOnce({ url: target.url, path: target.path, headers: target.headers, body: CHAT_JSON });
  let parsed;
  try {
    parsed = JSON.parse(plain.text);
  } catch {
    parsed = undefined;
  }
  if (plain.status !== 200 || !Array.isArray(parsed?.choices)) throw new Error(`non-streamed chat gave ${plain.status}: ${plain.text.slice(0, 300)}`);
  if (target.name === 'gateway' && typeof parsed.usage?.cost_usd_total !== 'number') throw new Error('the gateway reply has no usage.cost_usd_total');
  const stream = await requestOnce({ url: target.url, path: target.path, headers: target.headers, body: STREAM_JSON });
  if (stream.status !== 200 || !stream.text.includes('[DONE]')) throw new Error(`streamed chat gave ${stream.status}: ${stream.text.slice(0, 300)}`);
}

async function chatRun({ allChildren }, target, connections, durationS) {
  const child = target.child;
  child.resetPeak();
  const sampler = new RssSampler([child], 100);
  const cpu = new CpuMeter(allChildren, child);
  const redisBefore = cpuMsOfCommand('redis-server'); // every redis-server on the machine: the limits' share, plus other users' noise
  const result = await runAutocannon({ url: target.url + target.path, headers: target.headers, body: CHAT_JSON, connections, durationS });
  const redisMs = cpuMsOfCommand('redis-server') - redisBefore;
  const usage = cpu.stop();
  const sampled = sampler.stop().get(child.name);
  const { hwmMb } = child.memory();
  const serverMs = usage.cpuMsByChild[child.name];
  delete usage.cpuMsByChild;
  const perReq = (ms) => (result.requests > 0 ? (ms * 1000) / result.requests : NaN);
  return { ...result, cpuUsPerReq: perReq(serverMs), redisUsPerReq: perReq(redisMs), cpu: usage, peakRssMb: Math.max(hwmMb || 0, sampled) };
}

const cpuLine = (cpu, server) => `CPU% ${server} ${cpu[server]}, sim ${cpu.simulator}, loadgen ${cpu.loadgen}, others ${cpu.others}, run-queue wait ${cpu.serverRunqueueWaitPct}`;

/** Of several rounds, the one with the best primary figure; all rounds are kept under `rounds`. */
function best(runs, better) {
  const chosen = runs.reduce((a, b) => (better(b, a) ? b : a));
  return runs.length > 1 ? { ...chosen, rounds: runs.map(({ rounds: _r, ...r }) => r) } : chosen;
}

export async function chatScenario(ctx, targets, results) {
  const { say } = ctx;
  say(`warm-up: ${WARMUP_S} s at 32 connections per server`);
  for (const t of targets) await runAutocannon({ url: t.url + t.path, headers: t.headers, body: CHAT_JSON, connections: 32, durationS: WARMUP_S, collectLatencies: false });
  results.chat = {};
  for (const c of CONNECTIONS) {
    const runs = Object.fromEntries(targets.map((t) => [t.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const t of targets) {
        await sleep(500);
        const r = await chatRun(ctx, t, c, DURATION_S);
        runs[t.name].push(r);
        const bad = r.non2xx + r.errors > 0 ? `  !! ${r.non2xx} non-2xx, ${r.errors} errors ${JSON.stringify(r.statusCodes)}` : '';
        say(`chat  c=${String(c).padStart(3)} ${t.name.padEnd(7)} ${fmt(r.rps, 0).padStart(6)} req/s  p50 ${fmt(r.latency.p50)} ms  p99 ${fmt(r.latency.p99)} ms  ${fmt(r.cpuUsPerReq, 0)} µs CPU/req  Redis ${fmt(r.redisUsPerReq, 0)} µs/req  peak RSS ${fmt(r.peakRssMb, 0)} MB  (${cpuLine(r.cpu, t.name)})${bad}`);
      }
    }
    results.chat[c] = Object.fromEntries(targets.map((t) => [t.name, best(runs[t.name], (a, b) => a.rps > b.rps)]));
    const g = results.chat[c].gateway;
    const b = results.chat[c].bare;
    if (g && b) say(`      c=${String(c).padStart(3)} gateway ÷ bare (best of ${ROUNDS}): throughput ${fmt(g.rps / b.rps)}×, p50 ${fmt(g.latency.p50 / b.latency.p50)}×, p99 ${fmt(g.latency.p99 / b.latency.p99)}×`);
  }
}

export async function streamScenario({ say, allChildren }, targets, results) {
  results.stream = {};
  for (const t of targets) await runStreams({ url: t.url, path: t.path, headers: t.headers, body: STREAM_JSON, concurrency: 8, durationS: 1 });
  for (const c of STREAM_CONCURRENCY) {
    const runs = Object.fromEntries(targets.map((t) => [t.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const t of targets) {
        await sleep(300);
        const cpu = new CpuMeter(allChildren, t.child);
        const r = await runStreams({ url: t.url, path: t.path, headers: t.headers, body: STREAM_JSON, concurrency: c, durationS: STREAM_S });
        r.cpu = cpu.stop();
        r.cpuUsPerReq = r.requests > 0 ? (r.cpu.cpuMsByChild[t.name] * 1000) / r.requests : NaN;
        delete r.cpu.cpuMsByChild;
        runs[t.name].push(r);
        const bad = r.failed > 0 ? `  !! ${r.failed} failed: ${r.firstFailure}` : '';
        say(`stream c=${String(c).padStart(2)} ${t.name.padEnd(7)} ${fmt(r.rps, 0).padStart(6)} streams/s  TTFB p50 ${fmt(r.ttfb.p50)} p99 ${fmt(r.ttfb.p99)} ms  total p50 ${fmt(r.total.p50)} p99 ${fmt(r.total.p99)} ms  ${fmt(r.cpuUsPerReq, 0)} µs CPU/stream${bad}`);
      }
    }
    results.stream[c] = Object.fromEntries(targets.map((t) => [t.name, best(runs[t.name], (a, b) => a.ttfb.p50 < b.ttfb.p50)]));
  }
}

export async function soakScenario({ say }, gateway, results) {
  const refS = Math.min(60, Math.round(SOAK_S / 5));
  say(`soak: gateway at 32 connections for ${SOAK_S} s (RSS at ${refS} s vs the end)`);
  const sampler = new RssSampler([gateway.child], 1000);
  const r = await runAutocannon({ url: gateway.url + gateway.path, headers: gateway.headers, body: CHAT_JSON, connections: 32, durationS: SOAK_S, collectLatencies: false });
  sampler.stop();
  const rss = sampler.samples.filter((s) => Number.isFinite(s.rssMb));
  const mean = (xs) => xs.reduce((a, s) => a + s.rssMb, 0) / (xs.length || 1);
  const atRef = mean(rss.filter((s) => Math.abs(s.at - refS) <= 5));
  const atEnd = mean(rss.filter((s) => s.at >= SOAK_S - 10));
  const growthMb = atEnd - atRef;
  results.soak = {
    connections: 32, durationS: r.durationS, rps: r.rps, non2xx: r.non2xx + r.errors, refS, rssAtRefMb: atRef, rssAtEndMb: atEnd,
    growthMb, growthPct: (100 * growthMb) / atRef, peakMb: Math.max(...rss.map((s) => s.rssMb)),
    withinNoise: growthMb <= 10 || growthMb / atRef <= 0.1,
    series: rss.filter((_, i) => i % 10 === 0).map((s) => [Math.round(s.at), Math.round(s.rssMb)]),
  };
  say(`soak: ${fmt(r.rps, 0)} req/s, RSS ${fmt(atRef, 0)} MB at ${refS} s → ${fmt(atEnd, 0)} MB at the end (${growthMb >= 0 ? '+' : ''}${fmt(growthMb, 1)} MB)`);
}
