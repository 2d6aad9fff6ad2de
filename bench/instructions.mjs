#!/usr/bin/env node
// The gateway's CPU cost per request, in a form that repeats on a loaded machine: a fixed
// number of sequential-ish requests (non-streamed chat, and streamed chat of --tokens
// tokens) through `gateway serve` in front of `gateway simulate`, and the CPU the gateway
// process spent on them — every thread's on-CPU time from /proc/<pid>/task/*/schedstat
// (what process.cpuUsage() counts, in ns), best of --runs interleaved runs per checkout.
// Waiting for a CPU is not counted, so other users of the machine slow a run without
// inflating its figure much (cache and frequency effects remain: compare best to best).
// With --callgrind, the gateway runs under `valgrind --tool=callgrind` instead, and the
// figure is the instructions executed (Ir, every thread) between `callgrind_control -z`
// before the measured requests and `-d` after them, ~50× slower (use small --requests and
// --warmup). Neither is exact for a node process: where its collections and optimising
// compiles fall moves a window of a few hundred requests by up to ~20 % (2026-11-27, load
// average 9–22), so use many runs, and a quiet machine for changes of a few percent.
//
//   node bench/instructions.mjs --checkout /path/to/before --checkout . --runs 5
//
// Each --checkout must be built (dist/). The simulator is the first checkout's, shared.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { gatewayNodeFlags } from './lib/procs.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

const { values: opt } = parseArgs({
  options: {
    checkout: { type: 'string', multiple: true },
    requests: { type: 'string', default: '2000' },
    streams: { type: 'string', default: '500' },
    tokens: { type: 'string', default: '1000' },
    'chunk-bytes': { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    runs: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '500' },
    callgrind: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(`Usage: node bench/instructions.mjs [--checkout DIR]... [--requests N] [--streams N] [--tokens N]
    [--chunk-bytes N] [--concurrency N] [--runs N] [--warmup N] [--callgrind]
  --checkout DIR    a built checkout to measure (repeatable; default this one)
  --requests N      non-streamed chat requests per run (default 2000)
  --streams N       streamed chat requests per run (default 500)
  --tokens N        completion tokens of each streamed reply (default 1000)
  --chunk-bytes N   the simulator writes each stream in slices of N bytes (one upstream read each)
  --concurrency N   requests in flight (default 4)
  --runs N          interleaved runs per checkout; the best is reported (default 5)
  --warmup N        requests of each kind before measuring (default 500)
  --callgrind       count instructions under valgrind instead of CPU time`);
  process.exit(0);
}

const checkouts = (opt.checkout ?? [ROOT]).map((d) => resolve(d));
const N = Number(opt.requests);
const STREAMS = Number(opt.streams);
const CONC = Number(opt.concurrency);
const RUNS = Number(opt.runs);
const WARMUP = Number(opt.warmup);
const SIM_PREFIXES = { openai: '/openai/v1' };

const CHAT = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are a concise assistant.' },
    { role: 'user', content: 'Write one sentence about toll roads.' },
  ],
  max_tokens: 64,
};
const chunking = opt['chunk-bytes'] ? `,chunk_bytes=${Number(opt['chunk-bytes'])}` : '';
const STREAM = {
  ...CHAT,
  max_tokens: Number(opt.tokens) + 16,
  stream: true,
  stream_options: { include_usage: true },
  messages: [CHAT.messages[0], { role: 'user', content: `Write about toll roads. [[sim:tokens=${Number(opt.tokens)}${chunking}]]` }],
};

const children = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** Starts `cmd args` and resolves with the process and the URL of its "listening on" line. */
function start(cmd, args, cwd) {
  const proc = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  let out = '';
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${args.join(' ')} did not start:\n${out.slice(-2000)}`)), opt.callgrind ? 600_000 : 60_000);
    const seen = (d) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok({ proc, url: m[1] });
      }
    };
    proc.stdout.on('data', seen);
    proc.stderr.on('data', seen);
    proc.once('exit', (code) => fail(new Error(`${args.join(' ')} exited (${code}):\n${out.slice(-2000)}`)));
  });
}

/** The pid of the node process itself (under valgrind the spawned pid is valgrind's, which execs node: the same pid). */
function cpuNs(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns;
}

async function drive(pool, path, headers, body, count) {
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const res = await pool.request({ path, method: 'POST', headers, body });
      const text = await res.body.text();
      if (res.statusCode !== 200 || (body.includes('"stream":true') && !text.includes('[DONE]'))) failed++;
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker));
  if (failed > 0) throw new Error(`${failed} of ${count} requests to ${path} failed`);
}

function callgrindIr(pid, outFile) {
  execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  const base = `${outFile.split('/').pop()}.`;
  const dumps = readdirSync(dirname(outFile)).filter((f) => f.startsWith(base)).sort((a, b) => Number(a.slice(base.length)) - Number(b.slice(base.length)));
  const last = readFileSync(join(dirname(outFile), dumps[dumps.length - 1]), 'utf8');
  return Number(/^(?:summary|totals):\s*(\d+)/m.exec(last)?.[1] ?? NaN);
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'tollgate-instr-'));
  try {
    const sim = await start(process.execPath, [join(checkouts[0], 'bin', 'gateway.js'), 'simulate', '--port', '0'], checkouts[0]);
    const gateways = [];
    for (const [i, root] of checkouts.entries()) {
      const file = join(tmp, `gateway-${i}.yaml`);
      const providers = Object.fromEntries(Object.entries(SIM_PREFIXES).map(([id, p]) => [id, { base_url: sim.url + p, api_key: 'sim-key' }]));
      writeFileSync(file, JSON.stringify({
        server: { host: '127.0.0.1', port: 0 }, database: { url: `sqlite:${join(tmp, `gateway-${i}.db`)}` },
        providers_dir: join(root, 'providers'), log: { level: 'warn' }, providers,
      }));
      const cli = (...args) => execFileSync(process.execPath, [join(root, 'bin', 'gateway.js'), ...args, '--config', file], { cwd: root, encoding: 'utf8' });
      cli('orgs', 'create', 'bench', '--credits', '1000000');
      const key = cli('keys', 'create', '--org', 'bench').trim().split('\n').pop();
      const outFile = join(tmp, `callgrind-${i}.out`);
      // The checkout's own V8 flags (its bin/gateway.js shebang), as `npm start` runs it.
      const node = [...gatewayNodeFlags(root), join(root, 'bin', 'gateway.js'), 'serve', '--config', file];
      const g = opt.callgrind
        ? await start('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', '--instr-atstart=no', `--callgrind-out-file=${outFile}`, process.execPath, ...node], root)
        : await start(process.execPath, node, root);
      const pool = new Pool(g.url, { connections: CONC, pipelining: 1 });
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
      await drive(pool, '/v1/chat/completions', headers, JSON.stringify(CHAT), WARMUP);
      await drive(pool, '/v1/chat/completions', headers, JSON.stringify(STREAM), Math.ceil(WARMUP / 4));
      gateways.push({ root, g, pool, headers, outFile, chat: [], stream: [] });
      console.error(`${root}: ${g.url} (pid ${g.proc.pid}) warmed up`);
    }
    const measure = async (gw, body, count) => {
      const pid = gw.g.proc.pid;
      if (opt.callgrind) {
        // Instrumented only while measured: the warm-up runs at valgrind's uninstrumented speed.
        execFileSync('callgrind_control', ['-i', 'on', String(pid)], { stdio: 'ignore' });
        execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
      }
      const before = cpuNs(pid);
      await drive(gw.pool, '/v1/chat/completions', gw.headers, body, count);
      await new Promise((r) => setTimeout(r, 1200)); // the request log's batch (written every second) belongs to these requests
      const cost = opt.callgrind ? callgrindIr(pid, gw.outFile) : cpuNs(pid) - before;
      if (opt.callgrind) execFileSync('callgrind_control', ['-i', 'off', String(pid)], { stdio: 'ignore' });
      return cost / count;
    };
    for (let run = 1; run <= RUNS; run++) {
      for (const gw of gateways) {
        gw.chat.push(await measure(gw, JSON.stringify(CHAT), N));
        gw.stream.push(await measure(gw, JSON.stringify(STREAM), STREAMS));
        const unit = opt.callgrind ? 'Ir' : 'µs';
        const show = (x) => (opt.callgrind ? Math.round(x).toLocaleString('en') : (x / 1000).toFixed(1));
        console.error(`run ${run} ${gw.root}: chat ${show(gw.chat.at(-1))} ${unit}/request, stream ${show(gw.stream.at(-1))} ${unit}/stream`);
      }
    }
    const unit = opt.callgrind ? 'instructions (Ir)' : 'CPU µs';
    const show = (x) => (opt.callgrind ? Math.round(x).toLocaleString('en') : (x / 1000).toFixed(1));
    const stats = (xs) => {
      const s = [...xs].sort((a, b) => a - b);
      return `${show(s[0])} (median ${show(s[Math.floor(s.length / 2)])})`;
    };
    console.log(`\n${unit} per request, best of ${RUNS} interleaved runs (median); ${N} non-streamed, ${STREAMS} streamed of ${opt.tokens} tokens${chunking ? ` in ${opt['chunk-bytes']}-byte slices` : ''}, ${CONC} in flight`);
    console.log('\n| checkout | non-streamed | streamed |\n|---|---:|---:|');
    for (const gw of gateways) console.log(`| ${gw.root} | ${stats(gw.chat)} | ${stats(gw.stream)} |`);
    for (const gw of gateways) {
      await gw.pool.close();
      gw.g.proc.kill('SIGTERM');
    }
    sim.proc.kill('SIGTERM');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
