#!/usr/bin/env node
// `npm run bench`: Tollgate against a bare pass-through proxy (and Portkey with --peers),
// all in front of the same zero-latency provider simulator, in one run on one machine.
// Every server is its own child process; this process is the load generator.
// See docs/benchmarks.md for the method and the latest results.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './lib/load.mjs';
import { Child, gatewayArgs, killAll } from './lib/procs.mjs';
import { evaluateTargets, profileMarkdown, resultsMarkdown } from './lib/report.mjs';
import { telemetryScenario } from './lib/telemetry.mjs';
import { logsScenario } from './lib/logs.mjs';
import { limitsScenario } from './lib/limits.mjs';
import { cacheScenario } from './lib/cache.mjs';
import { routingScenario } from './lib/routing.mjs';
import { guardrailsScenario } from './lib/guardrails.mjs';
import { pgScenario } from './lib/pg.mjs';
import { CHAT_JSON, chatScenario, sanity, soakScenario, streamScenario } from './lib/chat.mjs';
import { musicScenario } from './lib/music.mjs';
import { profileScenario } from './lib/profile.mjs';
import { forgetRedisKeys, gatewayVariants, redisAnswers } from './lib/production.mjs';
import { CONNECTIONS, DURATION_S, LOG_ROWS, opt, QUICK, ROUNDS, scenarios, STREAM_S, WARMUP_S } from './lib/options.mjs';
import { ensureBuilt, ensurePeers, freePort, machine, tollgateInfo, updateDocs } from './lib/setup.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const BENCH = join(ROOT, 'bench');

/** Where the simulator serves each provider id the repo may declare (as in test/harness.ts). */
const SIMULATOR_PREFIXES = {
  openai: '/openai/v1', groq: '/groq/openai/v1', deepseek: '/deepseek/v1', mistral: '/mistral/v1',
  anthropic: '/anthropic/v1', google: '/gemini/v1beta', elevenlabs: '/elevenlabs/v1', deepgram: '/deepgram/v1',
};

const t0 = performance.now();
const clock = () => {
  const s = Math.floor((performance.now() - t0) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
};
const say = (msg) => console.log(`[${clock()}] ${msg}`);

process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}

// ---------------------------------------------------------------- preparation

/** Every provider of `dir` the simulator serves, pointed at it. */
function providerOverrides(simUrl, dir = join(ROOT, 'providers')) {
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

/** Every server process of the run, for the CPU breakdown of each measurement. */
const allChildren = [];
/** What the scenario modules (bench/lib/chat.mjs, music.mjs, profile.mjs) take from this run. */
const ctx = { root: ROOT, bench: BENCH, say, allChildren };

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
    // Its own provider files too: an older checkout does not know the settings newer ones use.
    const providers_dir = join(opt.compare, 'providers');
    writeFileSync(compareConfigFile, JSON.stringify({ ...production, providers_dir, providers: providerOverrides(sim.url, providers_dir), database: { url: `sqlite:${join(tmp, 'gateway-baseline.db')}` } }, null, 2));
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
    await chatScenario(ctx, targets, results);
    for (const t of targets) {
      results.memory[t.name].chatPeakMb = Math.max(...CONNECTIONS.map((c) => results.chat[c][t.name]?.peakRssMb ?? 0));
      results.memory[t.name].afterChatMb = t.child.memory().rssMb;
    }
  }
  if (scenarios.has('stream')) await streamScenario(ctx, targets, results);
  if (scenarios.has('music')) await musicScenario(ctx, musicConfigFile, musicKey, targets[0], Boolean(s3), results);
  if (scenarios.has('telemetry')) {
    await telemetryScenario({ root: ROOT, tmp, baseConfig: config, body: CHAT_JSON, durationS: DURATION_S, warmupS: WARMUP_S, rounds: ROUNDS, say, allChildren, keyFor }, results);
  }
  if (scenarios.has('soak')) await soakScenario(ctx, targets.find((t) => t.name === 'gateway'), results);
  if (scenarios.has('profile')) await profileScenario(ctx, profileConfigFile, profileKey, sim.url, tmp, date, results, false);
  else if (scenarios.has('profile-stream')) await profileScenario(ctx, profileConfigFile, profileKey, sim.url, tmp, date, results, true);
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