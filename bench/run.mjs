#!/usr/bin/env node
// `npm run bench`: Tollgate against a bare pass-through proxy (and Portkey with --peers),
// all in front of the same zero-latency provider simulator, in one run on one machine.
// Every server is its own child process; this process is the load generator.
// See docs/benchmarks.md for the method and the latest results.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summariseProfile } from './lib/cpuprofile.mjs';
import { requestOnce, runAutocannon, runBurst, runStreams } from './lib/load.mjs';
import { Child, CpuMeter, cpuMsOfCommand, gatewayArgs, killAll, RssSampler } from './lib/procs.mjs';
import { evaluateTargets, profileMarkdown, resultsMarkdown } from './lib/report.mjs';
import { telemetryScenario } from './lib/telemetry.mjs';
import { validateLyria, validateMusic } from './lib/checks.mjs';
import { logsScenario } from './lib/logs.mjs';
import { limitsScenario } from './lib/limits.mjs';
import { cacheScenario } from './lib/cache.mjs';
import { routingScenario } from './lib/routing.mjs';
import { guardrailsScenario } from './lib/guardrails.mjs';
import { pgScenario } from './lib/pg.mjs';
import { forgetRedisKeys, gatewayVariants, redisAnswers } from './lib/production.mjs';
import { CONNECTIONS, DURATION_S, LOG_ROWS, MUSIC_COUNT, MUSIC_SIZE_MB, opt, QUICK, ROUNDS, scenarios, SOAK_S, STREAM_CONCURRENCY, STREAM_S, WARMUP_S } from './lib/options.mjs';
import { ensureBuilt, ensurePeers, freePort, machine, tollgateInfo, updateDocs } from './lib/setup.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const BENCH = join(ROOT, 'bench');

/** Where the simulator serves each provider id the repo may declare (as in test/harness.ts). */
const SIMULATOR_PREFIXES = {
  openai: '/openai/v1', groq: '/groq/openai/v1', deepseek: '/deepseek/v1', mistral: '/mistral/v1',
  anthropic: '/anthropic/v1', google: '/gemini/v1beta', elevenlabs: '/elevenlabs/v1', deepgram: '/deepgram/v1',
};

const CHAT_BODY = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are a concise assistant.' },
    { role: 'user', content: 'Write one sentence about toll roads.' },
  ],
  max_tokens: 64,
};
const CHAT_JSON = JSON.stringify(CHAT_BODY);
const STREAM_JSON = JSON.stringify({ ...CHAT_BODY, stream: true, stream_options: { include_usage: true } });
const MUSIC_PROMPT = `An upbeat synth-pop track about a highway at night, with a catchy chorus. [[sim:size_mb=${MUSIC_SIZE_MB}]]`;

const t0 = performance.now();
const clock = () => {
  const s = Math.floor((performance.now() - t0) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
};
const say = (msg) => console.log(`[${clock()}] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');

process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}

// ---------------------------------------------------------------- preparation

function providerOverrides(simUrl) {
  const dir = join(ROOT, 'providers');
  const ids = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))
    .map((f) => /^id:\s*([a-z0-9-]+)/m.exec(readFileSync(join(dir, f), 'utf8'))?.[1])
    .filter((id) => id && id in SIMULATOR_PREFIXES);
  return Object.fromEntries(ids.map((id) => [id, { base_url: simUrl + SIMULATOR_PREFIXES[id], api_key: 'sim-key' }]));
}

function gatewayCli(...args) {
  return gatewayCliOf(ROOT, ...args);
}

/** The CLI of a checkout: the --compare baseline's database is made by its own CLI, so its schema is the one it knows. */
function gatewayCliOf(root, ...args) {
  return execFileSync(process.execPath, [join(root, 'bin', 'gateway.js'), ...args], { cwd: root, encoding: 'utf8' });
}

// ---------------------------------------------------------------- scenarios

async function sanity(target) {
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

/** Every server process of the run, for the CPU breakdown of each measurement. */
const allChildren = [];

async function chatRun(target, connections, durationS) {
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

async function chatScenario(targets, results) {
  say(`warm-up: ${WARMUP_S} s at 32 connections per server`);
  for (const t of targets) await runAutocannon({ url: t.url + t.path, headers: t.headers, body: CHAT_JSON, connections: 32, durationS: WARMUP_S, collectLatencies: false });
  results.chat = {};
  for (const c of CONNECTIONS) {
    const runs = Object.fromEntries(targets.map((t) => [t.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const t of targets) {
        await sleep(500);
        const r = await chatRun(t, c, DURATION_S);
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

async function streamScenario(targets, results) {
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

async function musicScenario(configFile, key, bare, storage, results) {
  const child = await Child.start({ name: 'gateway-music', args: gatewayArgs(ROOT, configFile), cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
  allChildren.push(child);
  say(`music gateway ${child.url} (pid ${child.pid}; default configuration${storage ? ' + S3 storage on s3rver' : ', no S3 (s3rver did not start)'})`);
  try {
    await sleep(300);
    const idleMb = child.memory().rssMb;
    await musicRuns({ name: 'gateway', child, url: child.url, key }, bare, storage, results);
    if (results.music.gateway) results.music.gateway.idleRssMb = idleMb;
  } finally {
    allChildren.splice(allChildren.indexOf(child), 1);
    await child.stop();
  }
}

async function musicRuns(gateway, bare, storage, results) {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${gateway.key}` };
  const body = JSON.stringify({ model: 'tune-3-pro-preview', prompt: MUSIC_PROMPT });
  say('music: probing POST /v1/music');
  const probe = await requestOnce({ url: gateway.url, path: '/v1/music', headers, body: JSON.stringify({ model: 'tune-3-pro-preview', prompt: 'probe [[sim:size_mb=1]]' }), timeoutMs: 120_000 });
  if (probe.status === 404 && probe.text.includes('route_not_found')) {
    results.music = { reason: 'not available in this build (POST /v1/music is 404 route_not_found)' };
    say(`music: ${results.music.reason}`);
    return;
  }
  if (probe.status !== 200) {
    results.music = { reason: `probe failed: status ${probe.status}: ${probe.text.slice(0, 200)}` };
    say(`music: ${results.music.reason}`);
    return;
  }
  results.music = { storage: storage ? 's3' : 'inline', count: MUSIC_COUNT, sizeMb: MUSIC_SIZE_MB };
  const lyriaBody = JSON.stringify({ contents: [{ parts: [{ text: MUSIC_PROMPT }] }], generationConfig: { responseModalities: ['AUDIO', 'TEXT'] } });
  const runs = [
    ['bare', bare, { url: bare.url, path: '/v1beta/models/lyria-3-pro-preview:generateContent', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'sim-key' }, body: lyriaBody, validate: validateLyria(MUSIC_SIZE_MB) }],
    ['gateway', gateway, { url: gateway.url, path: '/v1/music', headers, body, validate: validateMusic(storage ? 's3' : undefined, MUSIC_SIZE_MB) }],
  ];
  for (const [name, target, req] of runs) {
    await sleep(500);
    target.child.resetPeak();
    const rssBeforeMb = target.child.memory().rssMb;
    const sampler = new RssSampler([target.child], 50);
    const r = await runBurst({ ...req, count: MUSIC_COUNT, timeoutMs: 240_000 });
    const sampled = sampler.stop().get(target.child.name);
    r.peakRssMb = Math.max(target.child.memory().hwmMb || 0, sampled);
    r.rssBeforeMb = rssBeforeMb;
    results.music[name] = r;
    say(`music ${name.padEnd(7)} ${r.ok}/${r.count} ok, wall ${fmt(r.wallMs / 1000)} s, p50 ${fmt(r.latency.p50 / 1000)} s, peak RSS ${fmt(r.peakRssMb, 0)} MB${r.errors.length ? `  !! ${r.errors.join('; ')}` : ''}`);
  }
}

async function soakScenario(gateway, results) {
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

/** Starts `args` under `node --cpu-prof`, loads it at 32 connections, and summarises the samples taken under load. */
async function profileOne({ name, args, path, headers, dir, durationS, streamed }) {
  const child = await Child.start({
    name, args, cwd: ROOT, ready: /listening on (http:\/\/\S+)/,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`],
  });
  const load = (seconds) => (streamed
    ? runStreams({ url: child.url, path, headers, body: STREAM_JSON, concurrency: 32, durationS: seconds })
    : runAutocannon({ url: child.url + path, headers, body: CHAT_JSON, connections: 32, durationS: seconds, collectLatencies: false }));
  // Boot, module loading and the JIT warm-up are not the hot path: their samples are left out.
  await load(WARMUP_S);
  const skipMs = performance.now() - child.spawnedAt;
  const r = await load(durationS);
  await child.stop(30_000);
  const file = join(dir, `${name}.cpuprofile`);
  if (!existsSync(file)) throw new Error(`no profile was written for ${name}:\n${child.tail()}`);
  return { file, rps: r.rps, requests: r.requests, summary: summariseProfile(JSON.parse(readFileSync(file, 'utf8')), { root: ROOT, top: 40, skipMs }) };
}

async function profileScenario(configFile, key, simUrl, tmp, date, results, streamed) {
  const dir = join(tmp, 'cpuprofile');
  mkdirSync(dir, { recursive: true });
  const durationS = QUICK ? 4 : 12;
  say(`profile: the gateway, then the bare proxy, under --cpu-prof at 32 ${streamed ? 'streams' : 'connections'} for ${durationS} s each`);
  try {
    const gw = await profileOne({
      name: 'gateway', args: gatewayArgs(ROOT, configFile), path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, dir, durationS, streamed,
    });
    const bare = await profileOne({
      name: 'bare', args: [join(BENCH, 'bare-proxy.mjs'), '--upstream', `${simUrl}/openai`], path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sim-key' }, dir, durationS, streamed,
    });
    const kept = join(BENCH, 'results', `${date}-gateway${streamed ? '-stream' : ''}.cpuprofile`);
    copyFileSync(gw.file, kept);
    results.profile = {
      connections: 32, streamed: Boolean(streamed), durationS, rps: gw.rps, requests: gw.requests, file: kept.slice(ROOT.length + 1), summary: gw.summary,
      bare: { rps: bare.rps, requests: bare.requests, summary: { busyMs: bare.summary.busyMs, byArea: bare.summary.byArea, bySelf: bare.summary.bySelf.slice(0, 15), allAreas: bare.summary.allAreas } },
    };
    say(`profile: gateway ${fmt(gw.rps, 0)} req/s, ${fmt((gw.summary.busyMs * 1000) / gw.requests, 0)} µs CPU/req while profiled; bare ${fmt(bare.rps, 0)} req/s, ${fmt((bare.summary.busyMs * 1000) / bare.requests, 0)} µs CPU/req. Gateway top self time:`);
    for (const f of gw.summary.bySelf.slice(0, 12)) say(`  ${fmt(f.selfPct, 1).padStart(5)} %  ${f.name}  ${f.location}`);
    say(`  saved ${results.profile.file} (open in Chrome DevTools › Performance)`);
  } catch (err) {
    results.profile = { error: err.message };
    say(`profile failed: ${err.message}`);
  }
}

// ---------------------------------------------------------------- main

async function main() {
  const date = new Date().toISOString().slice(0, 10);
  const results = {
    date, startedAt: new Date().toISOString(), machine: machine(), tollgate: tollgateInfo(),
    options: { argv: process.argv.slice(2).join(' '), quick: QUICK, soak: scenarios.has('soak'), peers: opt.peers, durationS: DURATION_S, warmupS: WARMUP_S, streamS: STREAM_S, rounds: ROUNDS, scenarios: [...scenarios] },
    peers: false, skipped: {},
  };
  const m = results.machine;
  say(`Tollgate bench: ${m.nproc} CPUs (${m.cpu}), Node ${m.node}; scenarios ${[...scenarios].join(', ')}${opt.peers ? ' + Portkey' : ''}`);
  ensureBuilt(say);

  const tmp = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const cleanup = () => (opt.keep ? say(`kept ${tmp}`) : rmSync(tmp, { recursive: true, force: true }));
  const children = [];
  try {
    if (scenarios.has('logs')) {
      // No upstream is called: the providers point at a closed port.
      await logsScenario({ tmp, say, results, providers: providerOverrides('http://127.0.0.1:9'), gatewayCli, rows: Math.round(LOG_ROWS) });
    }
    if (scenarios.has('limits')) await limitsScenario({ say, results, quick: QUICK });
    if (scenarios.has('cache')) await cacheScenario({ say, results, quick: QUICK });
    if (scenarios.has('routing')) await routingScenario({ say, results, quick: QUICK });
    if (scenarios.has('guardrails')) await guardrailsScenario({ say, results, quick: QUICK });
    if (scenarios.has('pg')) {
      const sim = await Child.start({ name: 'simulator', args: [join(ROOT, 'bin', 'gateway.js'), 'simulate', '--port', '0'], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
      children.push(sim);
      await pgScenario({ tmp, say, results, providers: providerOverrides(sim.url), gatewayCli, connections: 32, durationS: DURATION_S, warmupS: WARMUP_S });
    }
    if (['chat', 'stream', 'music', 'telemetry', 'soak', 'profile', 'profile-stream'].some((s) => scenarios.has(s))) await trafficScenarios(tmp, children, results, date);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await forgetRedisKeys();
    cleanup();
  }
  await finish(results, date);
}

/** Everything that sends model traffic: the simulator, the gateway, the bare proxy (and Portkey), and their scenarios. */
async function trafficScenarios(tmp, children, results, date) {
  const sim = await Child.start({ name: 'simulator', args: [join(ROOT, 'bin', 'gateway.js'), 'simulate', '--port', '0'], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
  children.push(sim);
  allChildren.push(sim);
  say(`simulator ${sim.url} (pid ${sim.pid}, zero latency)`);

  let s3;
  if (scenarios.has('music')) {
    try {
      s3 = await Child.start({ name: 's3rver', args: [join(BENCH, 's3-server.mjs'), '--dir', join(tmp, 's3'), '--bucket', 'tollgate-music'], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
      children.push(s3);
      allChildren.push(s3);
      say(`s3rver ${s3.url} (pid ${s3.pid})`);
    } catch (err) {
      say(`s3rver did not start (${err.message.split('\n')[0]}); music runs without storage`);
    }
  }

  const configFile = join(tmp, 'gateway.yaml');
  const config = {
    server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 20_000 },
    database: { url: `sqlite:${join(tmp, 'gateway.db')}` },
    providers_dir: join(ROOT, 'providers'),
    log: { level: 'warn' },
    providers: providerOverrides(sim.url),
  };
  writeFileSync(configFile, JSON.stringify(config, null, 2)); // JSON is YAML
  // Music runs on a second gateway with S3 storage and its own SQLite file (one gateway
  // process owns a SQLite ledger): the chat gateway stays in the default configuration.
  const musicConfigFile = join(tmp, 'gateway-music.yaml');
  const storage = s3 ? { s3: { bucket: 'tollgate-music', endpoint: s3.url, region: 'us-east-1', access_key_id: 'S3RVER', secret_access_key: 'S3RVER', force_path_style: true } } : undefined;
  writeFileSync(musicConfigFile, JSON.stringify({ ...config, database: { url: `sqlite:${join(tmp, 'gateway-music.db')}` }, ...(storage ? { storage } : {}) }, null, 2));
  const keyFor = (file, limitFlags = [], root = ROOT) => {
    gatewayCliOf(root, 'orgs', 'create', 'bench', '--credits', '1000000', '--config', file);
    return gatewayCliOf(root, 'keys', 'create', '--org', 'bench', ...limitFlags, '--config', file).trim().split('\n').pop();
  };
  // The measured gateway runs as in production (metrics and limits on); --costs adds the variants without them.
  const redis = await redisAnswers();
  const variants = gatewayVariants({ tmp, base: config, redis, costs: opt.costs });
  results.gatewayConfig = Object.fromEntries(variants.map((v) => [v.name, v.describe]));
  const key = keyFor(variants[0].file, variants[0].limitFlags);
  const musicKey = keyFor(musicConfigFile);
  // The profiled gateway (production configuration) runs beside the measured one, so it too gets its own SQLite file.
  const profileConfigFile = join(tmp, 'gateway-profile.yaml');
  writeFileSync(profileConfigFile, JSON.stringify({ ...JSON.parse(readFileSync(variants[0].file, 'utf8')), database: { url: `sqlite:${join(tmp, 'gateway-profile.db')}` } }, null, 2));
  const profileKey = scenarios.has('profile') || scenarios.has('profile-stream') ? keyFor(profileConfigFile, variants[0].limitFlags) : '';

  const json = { 'content-type': 'application/json' };
  const gatewayTargets = [];
  for (const [i, v] of variants.entries()) {
    const vKey = i === 0 ? key : keyFor(v.file, v.limitFlags);
    const child = await Child.start({ name: v.name, args: gatewayArgs(ROOT, v.file), cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
    children.push(child);
    allChildren.push(child);
    say(`${v.name} ${child.url} (pid ${child.pid}; SQLite, auth, billing, request log, log.level warn; ${v.describe})`);
    gatewayTargets.push({ name: v.name, child, url: child.url, path: '/v1/chat/completions', headers: { ...json, authorization: `Bearer ${vKey}` }, key: vKey });
  }
  const bareChild = await Child.start({ name: 'bare', args: [join(BENCH, 'bare-proxy.mjs'), '--upstream', `${sim.url}/openai`], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
  children.push(bareChild);
  allChildren.push(bareChild);
  say(`bare proxy ${bareChild.url} (pid ${bareChild.pid})`);

  let baseline;
  if (opt.compare) {
    // The same configuration on its own SQLite file, served by the other checkout's code.
    const compareConfigFile = join(tmp, 'gateway-baseline.yaml');
    const production = JSON.parse(readFileSync(variants[0].file, 'utf8'));
    writeFileSync(compareConfigFile, JSON.stringify({ ...production, database: { url: `sqlite:${join(tmp, 'gateway-baseline.db')}` } }, null, 2));
    const compareKey = keyFor(compareConfigFile, variants[0].limitFlags, opt.compare);
    const child = await Child.start({ name: 'baseline', args: gatewayArgs(opt.compare, compareConfigFile), cwd: opt.compare, ready: /listening on (http:\/\/\S+)/ });
    children.push(child);
    allChildren.push(child);
    say(`baseline gateway ${child.url} (pid ${child.pid}; the code of ${opt.compare})`);
    baseline = { name: 'baseline', child, url: child.url, path: '/v1/chat/completions', headers: { ...json, authorization: `Bearer ${compareKey}` }, key: compareKey };
  }
  const targets = [
    { name: 'bare', child: bareChild, url: bareChild.url, path: '/v1/chat/completions', headers: { ...json, authorization: 'Bearer sim-key' } },
    ...gatewayTargets,
  ];
  if (baseline) targets.splice(1, 0, baseline);
  if (opt.peers) {
    try {
      const entry = ensurePeers(say);
      const port = await freePort();
      const pk = await Child.start({
        name: 'portkey', args: [entry, `--port=${port}`, '--headless'], cwd: join(BENCH, 'peers'), env: { NODE_ENV: 'production' }, ready: /(Ready for connections)/,
      });
      children.push(pk);
      allChildren.push(pk);
      const target = {
        name: 'portkey', child: pk, url: `http://127.0.0.1:${port}`, path: '/v1/chat/completions',
        headers: { ...json, authorization: 'Bearer sim-key', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${sim.url}/openai/v1` },
      };
      await sanity(target);
      targets.push(target);
      results.peers = true;
      const version = JSON.parse(readFileSync(join(BENCH, 'peers', 'node_modules', '@portkey-ai', 'gateway', 'package.json'), 'utf8')).version;
      results.portkeyVersion = version;
      say(`Portkey ${version} http://127.0.0.1:${port} (pid ${pk.pid})`);
    } catch (err) {
      results.skipped.portkey = err.message.split('\n')[0];
      say(`Portkey skipped: ${results.skipped.portkey}`);
    }
  }
  for (const t of targets.filter((x) => x.name !== 'portkey')) await sanity(t);
  say('sanity checks passed (non-streamed and streamed chat through every server)');
  await sleep(300);
  results.memory = Object.fromEntries(targets.map((t) => [t.name, { idleMb: t.child.memory().rssMb }]));

  if (scenarios.has('chat')) {
    await chatScenario(targets, results);
    for (const t of targets) {
      results.memory[t.name].chatPeakMb = Math.max(...CONNECTIONS.map((c) => results.chat[c][t.name]?.peakRssMb ?? 0));
      results.memory[t.name].afterChatMb = t.child.memory().rssMb;
    }
  }
  if (scenarios.has('stream')) await streamScenario(targets, results);
  if (scenarios.has('music')) await musicScenario(musicConfigFile, musicKey, targets[0], Boolean(s3), results);
  if (scenarios.has('telemetry')) {
    await telemetryScenario({ root: ROOT, tmp, baseConfig: config, body: CHAT_JSON, durationS: DURATION_S, warmupS: WARMUP_S, rounds: ROUNDS, say, allChildren, keyFor }, results);
  }
  if (scenarios.has('soak')) await soakScenario(targets.find((t) => t.name === 'gateway'), results);
  if (scenarios.has('profile')) await profileScenario(profileConfigFile, profileKey, sim.url, tmp, date, results, false);
  else if (scenarios.has('profile-stream')) await profileScenario(profileConfigFile, profileKey, sim.url, tmp, date, results, true);
}

async function finish(results, date) {
  results.elapsedS = (performance.now() - t0) / 1000;
  results.finishedAt = new Date().toISOString();
  results.checks = evaluateTargets(results);
  const md = resultsMarkdown(results);
  const outDir = join(BENCH, 'results');
  mkdirSync(outDir, { recursive: true });
  // Partial and quick runs get their own names, so they never overwrite a full run of the day.
  const name = `${date}${QUICK ? '-quick' : ''}${opt.only ? `-${[...scenarios].join('+')}` : ''}`;
  writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  const profileMd = results.profile ? `\n\n#### Profile\n\n${profileMarkdown(results.profile)}` : '';
  writeFileSync(join(outDir, `${name}.md`), `${md}${profileMd}\n`);
  console.log(`\n${md}${profileMd}\n`);
  say(`saved bench/results/${name}.json and bench/results/${name}.md`);
  if (opt.docs) {
    updateDocs(md, results.profile ? profileMarkdown(results.profile) : undefined);
    say('updated docs/benchmarks.md');
  }
}

/** Re-renders a saved results file (after a change to the report, say) without measuring anything. */
function render(file) {
  const results = JSON.parse(readFileSync(file, 'utf8'));
  results.checks = evaluateTargets(results);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  const md = resultsMarkdown(results);
  const profileMd = results.profile ? `\n\n#### Profile\n\n${profileMarkdown(results.profile)}` : '';
  writeFileSync(file.replace(/\.json$/, '.md'), `${md}${profileMd}\n`);
  console.log(`${md}${profileMd}`);
  if (opt.docs) updateDocs(md, results.profile ? profileMarkdown(results.profile) : undefined);
}

if (opt.render) {
  render(opt.render);
  process.exit(0);
}

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err.message}`);
  killAll();
  process.exit(1);
});
