// The `pg` scenario of bench/run.mjs: the credit ledger's throughput on PostgreSQL (issue 14,
// finding 5). Non-streamed chat through real `gateway serve` processes in front of the
// simulator, one org with one key (the busiest case: every request reserves and settles on
// the same balance row), in the same run: SQLite with one instance, PostgreSQL with one
// instance, PostgreSQL with two and with three instances (the load split evenly over them),
// and three again without balance slices; each with the CPU it took per request (gateways,
// PostgreSQL, the rest) and how many connections waited on a lock. After each
// configuration the org's ledger is checked: credits − balance = Σ charges = Σ logged costs.
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { readRows } from './db.mjs';
import { runAutocannon } from './load.mjs';
import { Child, CpuMeter, cpuMsOfCommand } from './procs.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PG_URL = process.env.TOLLGATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const LEDGER_SQL = `SELECT o.balance_micros AS balance,
    (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE org_id = o.id AND kind = 'credit') AS credited,
    (SELECT COALESCE(SUM(-amount_micros), 0) FROM ledger WHERE org_id = o.id AND kind = 'charge') AS charged,
    (SELECT COALESCE(SUM(cost_micros), 0) FROM request_logs WHERE org_id = o.id) AS logged,
    (SELECT COUNT(*) FROM request_logs WHERE org_id = o.id) AS rows
  FROM orgs o WHERE o.name = 'bench'`;

async function ledgerOf(dbUrl) {
  const [row] = await readRows(dbUrl, LEDGER_SQL, PG_URL);
  const n = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
  return { ...n, exact: n.charged === n.logged && n.credited - n.balance === n.logged };
}

async function pgReachable() {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

async function dropSchema(schema) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}

/**
 * Samples, every 50 ms until `stop()`, how many client connections of the server wait on a
 * lock (a busy org's balance row, above all); `stop()` resolves to the mean.
 */
function lockWaits() {
  const client = new pg.Client({ connectionString: PG_URL });
  const counts = [];
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND backend_type = 'client backend'");
      counts.push(Number(rows[0].n));
      await new Promise((r) => setTimeout(r, 50));
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return counts.length ? counts.reduce((a, b) => a + b, 0) / counts.length : NaN;
    },
  };
}

/** One configuration: `instances` gateway processes on `dbUrl`, loaded for `durationS` after a warm-up. */
async function oneConfig({ name, dbUrl, instances, tmp, providers, gatewayCli, say, connections, durationS, warmupS, database = {} }) {
  const config = join(tmp, `pg-${name}.yaml`);
  writeFileSync(config, JSON.stringify({
    server: { host: '127.0.0.1', port: 0 }, database: { url: dbUrl, ...database }, log: { level: 'warn' }, providers,
    providers_dir: join(ROOT, 'providers'),
  }));
  gatewayCli('orgs', 'create', 'bench', '--credits', '1000000', '--config', config);
  const key = gatewayCli('keys', 'create', '--org', 'bench', '--config', config).trim().split('\n').pop();
  const gws = [];
  try {
    for (let i = 0; i < instances; i++) {
      gws.push(await Child.start({ name: `gateway-pg-${name}-${i}`, args: [join(ROOT, 'bin', 'gateway.js'), 'serve', '--config', config, '--port', '0'], cwd: ROOT, ready: /listening on (http:\/\/\S+)/, timeoutMs: 60_000 }));
    }
    const load = (seconds) => Promise.all(gws.map((g) => runAutocannon({
      url: `${g.url}/v1/chat/completions`, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'Say hello' }] }),
      connections: Math.max(1, Math.round(connections / instances)), durationS: seconds, collectLatencies: false,
    })));
    await load(warmupS);
    const meter = new CpuMeter(gws);
    const pgBefore = cpuMsOfCommand('postgres');
    const waits = dbUrl.startsWith('sqlite:') ? undefined : lockWaits();
    const runs = await load(durationS);
    const pgMs = cpuMsOfCommand('postgres') - pgBefore;
    const lockWaiting = await waits?.stop();
    const cpu = meter.stop();
    const rps = runs.reduce((a, r) => a + r.rps, 0);
    // Where the CPU went, per request: the gateways together, and the rest of the machine (PostgreSQL, the simulator, the load generator).
    const requests = rps * durationS;
    const gatewayMs = Object.values(cpu.cpuMsByChild).reduce((a, b) => a + b, 0);
    const cpuPerReq = {
      gatewayUs: (gatewayMs * 1000) / requests, postgresUs: (pgMs * 1000) / requests,
      restUs: ((cpu.machine / 100) * durationS * 1e6 - (gatewayMs + pgMs) * 1000) / requests, machinePct: cpu.machine,
    };
    const locks = lockWaiting === undefined ? '' : `, ${lockWaiting.toFixed(1)} connections waiting on a lock (mean)`;
    const non2xx = runs.reduce((a, r) => a + r.non2xx + r.errors, 0);
    const p99 = Math.max(...runs.map((r) => r.latency.p99));
    const exits = [];
    for (const g of gws) exits.push(await g.stop());
    const ledger = await ledgerOf(dbUrl);
    if (!ledger.exact) say(`pg ${name}: ledger ${JSON.stringify(ledger)}; exits ${JSON.stringify(exits)}`);
    say(`pg ${name.padEnd(14)} ${rps.toFixed(0).padStart(6)} req/s (${connections} connections over ${instances} instance(s), p99 ≤ ${p99} ms, ${non2xx} non-2xx); `
      + `CPU ${cpuPerReq.gatewayUs.toFixed(0)} µs/req in the gateways, ${cpuPerReq.postgresUs.toFixed(0)} in PostgreSQL, ${cpuPerReq.restUs.toFixed(0)} elsewhere, machine ${cpu.machine}%${locks}; ledger ${ledger.exact ? 'exact' : 'NOT EXACT'} over ${ledger.rows} rows`);
    return { instances, connections, rps, p99, non2xx, cpuPerReq, lockWaiting, ledgerExact: ledger.exact, rows: ledger.rows, ledger, exits };
  } finally {
    for (const g of gws) if (g.running) await g.stop();
  }
}

export async function pgScenario({ tmp, say, results, providers, gatewayCli, connections, durationS, warmupS }) {
  results.pg = {};
  const common = { tmp, providers, gatewayCli, say, connections, durationS, warmupS };
  if (!(await pgReachable())) {
    results.pg.reason = `PostgreSQL not reachable at ${PG_URL.replace(/\/\/[^@]*@/, '//***@')}`;
    say(`pg: skipped (${results.pg.reason})`);
    return;
  }
  results.pg.sqlite1 = await oneConfig({ ...common, name: 'sqlite-1', dbUrl: `sqlite:${join(tmp, 'pg-bench.db')}`, instances: 1 });
  results.pg.cpus = availableParallelism();
  // The last row is the ledger without balance slices (every request reserves on the org's row), for comparison.
  for (const [label, instances, database] of [['pg1', 1], ['pg2', 2], ['pg3', 3], ['pg3NoSlices', 3, { balance_slice_usd: '0' }]]) {
    const schema = `tollgate_bench_ledger_${process.pid}_${label.toLowerCase()}`;
    const u = new URL(PG_URL);
    u.searchParams.set('schema', schema);
    try {
      results.pg[label] = await oneConfig({ ...common, name: `postgres-${label}`, dbUrl: u.toString(), instances, database });
    } finally {
      await dropSchema(schema);
    }
  }
  results.pg.ratioPg1ToSqlite = results.pg.pg1.rps / results.pg.sqlite1.rps;
  results.pg.ratioPg2ToPg1 = results.pg.pg2.rps / results.pg.pg1.rps;
  results.pg.ratioPg3ToPg1 = results.pg.pg3.rps / results.pg.pg1.rps;
  say(`pg: PostgreSQL 1 instance / SQLite = ${results.pg.ratioPg1ToSqlite.toFixed(2)}×; 2 instances / 1 = ${results.pg.ratioPg2ToPg1.toFixed(2)}×; 3 instances / 1 = ${results.pg.ratioPg3ToPg1.toFixed(2)}×`);
}

/** The report's section. */
export function pgMarkdown(p) {
  if (p.reason) return `- ${p.reason}`;
  const cpuCells = (c) => (c ? `${c.gatewayUs.toFixed(0)} | ${c.postgresUs.toFixed(0)} | ${c.restUs.toFixed(0)} | ${c.machinePct}` : '— | — | — | —');
  const waiting = (r) => (Number.isFinite(r.lockWaiting) ? r.lockWaiting.toFixed(1) : '—');
  const row = (label, r) => `| ${label} | ${r.instances} | ${r.connections} | ${r.rps.toFixed(0)} | ${r.p99} | ${r.non2xx} | ${cpuCells(r.cpuPerReq)} | ${waiting(r)} | ${r.ledgerExact ? 'yes' : '**no**'} (${r.rows} rows) |`;
  return [
    `| store | instances | connections | req/s | p99 ms | non-2xx | CPU µs/req: gateways | PostgreSQL (all databases) | the rest (simulator, load generator, other) | machine CPU % (of ${p.cpus * 100}) | connections waiting on a lock (mean) | ledger = log |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    row('SQLite', p.sqlite1), row('PostgreSQL', p.pg1), ...(p.pg2 ? [row('PostgreSQL', p.pg2)] : []), row('PostgreSQL', p.pg3),
    ...(p.pg3NoSlices ? [row('PostgreSQL, no balance slices', p.pg3NoSlices)] : []),
    '',
    `PostgreSQL with one instance / SQLite: **${p.ratioPg1ToSqlite.toFixed(2)}×** (target ≥ 0.8×); two instances / one: **${p.ratioPg2ToPg1?.toFixed(2) ?? '—'}×**; three instances / one: **${p.ratioPg3ToPg1.toFixed(2)}×** (target ≥ 1×).`,
  ].join('\n');
}

/** The targets it adds. */
export function pgTargets(p, add) {
  if (!p || p.reason) {
    add('pg: PostgreSQL 1 instance ≥ 0.8× SQLite; 3 instances ≥ 1 instance', p?.reason ?? 'not run', null);
    return;
  }
  add('pg: PostgreSQL with 1 instance ≥ 0.8× SQLite throughput', `${p.ratioPg1ToSqlite.toFixed(2)}×`, p.ratioPg1ToSqlite >= 0.8);
  add('pg: 3 PostgreSQL instances not slower than 1', `${p.ratioPg3ToPg1.toFixed(2)}×`, p.ratioPg3ToPg1 >= 1);
  const all = [p.sqlite1, p.pg1, p.pg2, p.pg3, p.pg3NoSlices].filter(Boolean);
  add('pg: ledger = Σ logged costs after each load', all.every((r) => r.ledgerExact) ? 'exact' : 'not exact', all.every((r) => r.ledgerExact));
}
