// The command line of `npm run bench`: its help text, its options, and what they select.
import { parseArgs } from 'node:util';

const HELP = `Usage: npm run bench -- [options]

  --quick            ~1-minute smoke run (short load runs)
  --peers            also measure the Portkey gateway (installed into bench/peers on first use)
  --soak             add a 5-minute soak of the gateway at 32 connections (RSS leak check)
  --soak-minutes N   soak length (default 5)
  --profile          add a CPU profile of the gateway under the 32-connection load (node --cpu-prof)
  --only LIST        run only these scenarios: chat,stream,music,telemetry,routing,soak,profile,profile-stream,logs,limits,pg,cache,guardrails
                     (routing: µs per request of choosing the deployment, 1 and 10 keys; in the default run)
                     (guardrails, in the default run: what a project's pii + regex guardrails add to a 4 KB prompt)
                     (profile-stream: the CPU profile under 32 streamed chats at once instead)
                     (logs: the management API's log list, filters and usage at
                     --log-rows rows per store, SQLite and PostgreSQL; limits: what the
                     limit check costs a request, in-process and on Redis; pg: the credit
                     ledger's throughput, SQLite vs PostgreSQL with 1 and 3 instances;
                     none of these three is in the default run)
  --log-rows N       request-log rows of the logs scenario (default 1000000)
  --duration S       seconds per non-streamed load run (default 10, --quick 3)
  --rounds N         interleaved rounds per load level, best one reported (default 2, --quick 1)
  --costs            also measure the gateway without limits (metrics only) and without either,
                     so the cost of each shows (the measured gateway has both on, as in production)
  --compare DIR      also measure the gateway of another built checkout (e.g. the commit before a
                     change) as "baseline", interleaved with the others: a before/after in one run
  --connections LIST non-streamed chat connection levels (default 1,32,256)
  --streams LIST     streamed chat concurrency levels (default 1,32)
  --docs             write the results (and profile) into docs/benchmarks.md
  --keep             keep the temp folder (config, database, S3 files)
  --render FILE      measure nothing: re-render FILE (a results .json) to its .md (and docs with --docs)
  -h, --help
Results: bench/results/<YYYY-MM-DD>.json and .md`;

export const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    peers: { type: 'boolean', default: false },
    soak: { type: 'boolean', default: false },
    'soak-minutes': { type: 'string', default: '5' },
    profile: { type: 'boolean', default: false },
    only: { type: 'string' },
    duration: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string', default: '1,32,256' },
    compare: { type: 'string' },
    costs: { type: 'boolean', default: false },
    streams: { type: 'string', default: '1,32' },
    docs: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    render: { type: 'string' },
    'log-rows': { type: 'string', default: '1000000' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(HELP);
  process.exit(0);
}

export const QUICK = opt.quick;
export const DURATION_S = Number(opt.duration ?? (QUICK ? 3 : 10));
export const WARMUP_S = QUICK ? 1 : 3;
export const STREAM_S = QUICK ? 2 : 5;
const levels = (list) => list.split(',').map((x) => Number(x.trim()));
export const CONNECTIONS = levels(opt.connections);
export const STREAM_CONCURRENCY = levels(opt.streams);
/** Interleaved rounds per load level; the best round of each server is reported (noise on a shared machine only slows things down). */
export const ROUNDS = Number(opt.rounds ?? (QUICK ? 1 : 2));
export const MUSIC_COUNT = 20;
export const MUSIC_SIZE_MB = 4;
export const SOAK_S = Math.round(Number(opt['soak-minutes']) * 60);
export const LOG_ROWS = Number(opt['log-rows']);
export const scenarios = new Set(opt.only ? opt.only.split(',').map((s) => s.trim()) : ['chat', 'stream', 'music', 'telemetry', 'cache', 'routing', 'guardrails']);
if (!opt.only) {
  if (opt.soak) scenarios.add('soak');
  if (opt.profile) scenarios.add('profile');
}
const unknownScenarios = [...scenarios].filter((s) => !['chat', 'stream', 'music', 'telemetry', 'soak', 'profile', 'profile-stream', 'logs', 'limits', 'pg', 'cache', 'routing', 'guardrails'].includes(s));
if (unknownScenarios.length > 0 || ![DURATION_S, ROUNDS, SOAK_S, LOG_ROWS, ...CONNECTIONS, ...STREAM_CONCURRENCY].every((n) => Number.isFinite(n) && n > 0)) {
  console.error(`bench: bad option (${unknownScenarios.length > 0 ? `unknown scenario ${unknownScenarios.join(', ')}` : 'numbers must be positive'})\n\n${HELP}`);
  process.exit(2);
}
