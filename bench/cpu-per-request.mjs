#!/usr/bin/env node
// CPU per request of one gateway process, counted by the kernel for that process alone:
// the figure that repeats on a loaded shared machine, where req/s and wall-clock latency do
// not. One gateway in the production configuration (bench/lib/production.mjs: metrics on,
// rpm + tpm + concurrency + budget on the key, Redis when one answers), in front of the
// simulator; requests sent one after another (or --concurrency at a time) by this process.
// After a warm-up, each run sends --requests requests and reads the gateway's CPU time
// before and after: every thread of the process (/proc/<pid>/task/*/schedstat, in ns: the
// main thread, the SQLite writer, V8's helpers, libuv's pool) and the main thread apart.
// With --compare DIR, the gateway of another built checkout runs too, on its own SQLite
// file and Redis prefix, and the runs alternate (before, after, before, …), so both see
// the same machine. With --callgrind, each gateway runs under valgrind and the figure is
// instructions per request (Ir, all threads): slower (~50×), but the same count each run
// (Redis calls get 60 s instead of the 500 ms bound there, which valgrind's pace would miss).
//
// Usage: node bench/cpu-per-request.mjs [--requests 2000] [--runs 5] [--warmup 2000]
//          [--compare DIR] [--stream] [--tokens N] [--concurrency 1] [--callgrind]
// Reports each run, then the lowest and the median per gateway (noise only adds).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { median } from './lib/load.mjs';
import { Child, gatewayArgs, killAll } from './lib/procs.mjs';
import { forgetRedisKeys, LIMIT_FLAGS, REDIS_PREFIX, REDIS_URL, redisAnswers } from './lib/production.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' }, runs: { type: 'string', default: '5' }, warmup: { type: 'string', default: '2000' },
    compare: { type: 'string' }, stream: { type: 'boolean', default: false }, concurrency: { type: 'string', default: '1' },
    callgrind: { type: 'boolean', default: false }, tokens: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  // The file's opening comment is its help.
  const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
  const head = lines.slice(0, lines.findIndex((l) => !l.startsWith('//')));
  console.log(head.map((l) => l.slice(3)).join('\n'));
  process.exit(0);
}
const REQUESTS = Number(args.requests);
const RUNS = Number(args.runs);
const WARMUP = Number(args.warmup);
const CONCURRENCY = Number(args.concurrency);
// --tokens N: replies of N completion tokens (the simulator's [[sim:tokens=N]]), e.g. 1,000-token streams.
const TOKENS = args.tokens === undefined ? undefined : Number(args.tokens);
const BODY = JSON.stringify({
  model: 'gpt-4o-mini', max_tokens: TOKENS === undefined ? 64 : TOKENS + 16,
  messages: [
    { role: 'system', content: 'You are a concise assistant.' },
    { role: 'user', content: `Write one sentence about toll roads.${TOKENS === undefined ? '' : ` [[sim:tokens=${TOKENS}]]`}` },
  ],
  ...(args.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
});

/** CPU time in ns of every thread of `pid` and of its main thread (schedstat's first field: time on a CPU). */
function cpuNs(pid) {
  let all = 0;
  let main = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      all += ns;
      if (tid === String(pid)) main = ns;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { all, main };
}

/** Instructions (Ir) counted by callgrind since the last zeroing: dumps, reads the dump's totals, zeroes. */
function callgrindIr(pid, dir) {
  const before = new Set(readdirSync(dir));
  execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' });
  const dump = readdirSync(dir).find((f) => f.startsWith(`cg.${pid}`) && !before.has(f));
  if (!dump) throw new Error('callgrind wrote no dump');
  const totals = /^totals:\s+(\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'))?.[1];
  rmSync(join(dir, dump));
  return Number(totals);
}

async function send(pool, headers, n) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const res = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body: BODY });
      const text = await res.body.text();
      if (res.statusCode !== 200 || (args.stream ? !text.includes('[DONE]') : !text.includes('"usage"'))) {
        throw new Error(`the gateway answered ${res.statusCode}: ${text.slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function startGateway({ name, root, tmp, sim, redis }) {
  const file = join(tmp, `gateway-${name}.yaml`);
  writeFileSync(file, JSON.stringify({
    server: { host: '127.0.0.1', port: 0 }, database: { url: `sqlite:${join(tmp, `gateway-${name}.db`)}` }, providers_dir: join(root, 'providers'),
    log: { level: 'warn' }, providers: { openai: { base_url: `${sim.url}/openai/v1`, api_key: 'sim-key' } },
    metrics: { host: '127.0.0.1', port: 0 }, ...(redis ? { redis: { url: REDIS_URL, key_prefix: `${REDIS_PREFIX}${name}:`, ...(args.callgrind ? { timeout_ms: 60_000 } : {}) } } : {}),
  })); // JSON is YAML
  // Made by the checkout's own CLI: its database has the schema its code knows.
  const cli = (...a) => execFileSync(process.execPath, [join(root, 'bin/gateway.js'), ...a, '--config', file], { cwd: root, encoding: 'utf8' });
  cli('orgs', 'create', 'bench', '--credits', '1000000');
  const key = cli('keys', 'create', '--org', 'bench', ...LIMIT_FLAGS).trim().split('\n').pop();
  // Under callgrind, V8 compiles and collects on the main thread (--single-threaded): when an
  // optimisation lands and how much a collection finds then follow the requests, not the clock.
  const nodeArgs = [...(args.callgrind ? ['--single-threaded'] : []), ...gatewayArgs(root, file)];
  const child = args.callgrind
    ? await Child.start({
      name, cwd: tmp, ready: /listening on (http:\/\/\S+)/, timeoutMs: 600_000, command: 'valgrind',
      args: ['--tool=callgrind', '--trace-children=no', '--instr-atstart=no', `--callgrind-out-file=${join(tmp, 'cg.%p')}`, process.execPath, ...nodeArgs],
    })
    : await Child.start({ name, args: nodeArgs, cwd: root, ready: /listening on (http:\/\/\S+)/ });
  const pool = new Pool(child.url, { connections: CONCURRENCY, pipelining: 1 });
  return { name, root, child, pool, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, runs: [] };
}

async function main() {
  process.on('exit', killAll);
  const tmp = mkdtempSync(join(tmpdir(), 'tollgate-cpu-'));
  const gateways = [];
  let sim;
  try {
    sim = await Child.start({ name: 'simulator', args: [join(ROOT, 'bin/gateway.js'), 'simulate', '--port', '0'], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
    const redis = await redisAnswers();
    const roots = [...(args.compare ? [['baseline', resolve(args.compare)]] : []), ['gateway', ROOT]];
    for (const [name, root] of roots) gateways.push(await startGateway({ name, root, tmp, sim, redis }));
    const unit = args.callgrind ? 'Ir' : 'µs';
    console.log(`${args.stream ? 'streamed' : 'non-streamed'} chat, ${CONCURRENCY} at a time; limits ${redis ? `on Redis (${REDIS_URL})` : 'in process (no Redis answered)'}; ${roots.map(([n, r]) => `${n} = ${r}`).join(', ')}`);
    for (const g of gateways) {
      await send(g.pool, g.headers, WARMUP);
      if (!args.callgrind) continue;
      // Instrumenting retranslates the code: one more uncounted round with it on, then the counted runs.
      execFileSync('callgrind_control', ['--instr=on', String(g.child.pid)], { stdio: 'ignore' });
      await send(g.pool, g.headers, REQUESTS);
    }
    for (let run = 1; run <= RUNS; run++) {
      for (const g of gateways) {
        if (args.callgrind) callgrindIr(g.child.pid, tmp); // zero: what ran since is this run's
        const a = args.callgrind ? undefined : cpuNs(g.child.pid);
        await send(g.pool, g.headers, REQUESTS);
        if (args.callgrind) {
          const ir = callgrindIr(g.child.pid, tmp) / REQUESTS;
          g.runs.push({ all: ir, main: ir });
          console.log(`run ${run}  ${g.name.padEnd(9)} ${Math.round(ir).toLocaleString('en').padStart(12)} Ir per request (all threads)`);
        } else {
          const b = cpuNs(g.child.pid);
          const r = { all: (b.all - a.all) / 1000 / REQUESTS, main: (b.main - a.main) / 1000 / REQUESTS };
          g.runs.push(r);
          console.log(`run ${run}  ${g.name.padEnd(9)} ${r.all.toFixed(1).padStart(7)} µs CPU per request (main thread ${r.main.toFixed(1)})`);
        }
      }
    }
    console.log(`\n| gateway | lowest ${unit}/req | median ${unit}/req | main thread: lowest | median |\n|---|---:|---:|---:|---:|`);
    const fmt = (x) => (args.callgrind ? Math.round(x).toLocaleString('en') : x.toFixed(1));
    for (const g of gateways) {
      const all = g.runs.map((r) => r.all);
      const main = g.runs.map((r) => r.main);
      console.log(`| ${g.name} | ${fmt(Math.min(...all))} | ${fmt(median(all))} | ${fmt(Math.min(...main))} | ${fmt(median(main))} |`);
    }
  } finally {
    for (const g of gateways.reverse()) {
      await g.pool.close();
      await g.child.stop();
    }
    await sim?.stop();
    await forgetRedisKeys();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
