// The `logs` scenario of bench/run.mjs: the management API's request-log list, its
// filters and the usage sums at a million log rows, on SQLite and on PostgreSQL.
// Each store gets a database filled in SQL (one org with `rows` rows over 30 days, plus
// another org with a tenth as many, so every query is scoped for real), then a real
// `gateway serve` on it, signed in as an operator over HTTP like the console.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { readRows } from './db.mjs';
import { Child } from './procs.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const DAY = 86_400_000;
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-3-5-haiku', 'text-embedding-3-small', 'gemini-1.5-flash'];
const PG_URL = process.env.TOLLGATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** One org's rows as SQL: `n` from the generator, spread over the 30 days before `end`. */
function rowsSql(dialect, { org, projects, keys, count, end, prefix }) {
  const s = dialect === 'sqlite' ? 'i' : 'i::bigint';
  const pad = dialect === 'sqlite' ? `substr('000000000000000000000000' || i, -20, 20)` : `lpad(i::text, 20, '0')`;
  const pick = (list, mod) => `CASE ${s} % ${mod} ${list.map((v, k) => `WHEN ${k} THEN '${v}'`).join(' ')} END`;
  const f = dialect === 'sqlite' ? '0' : 'false';
  const step = Math.floor((30 * DAY) / count);
  return `'log_${prefix}' || ${pad}, 'req_${prefix}' || ${pad}, '${org}', ${pick(projects, 4)}, ${pick(keys, 4)}, 'chat',
    ${pick(MODELS, 5)}, ${pick(MODELS, 5)}, 'openai',
    CASE WHEN ${s} % 50 = 0 THEN 502 WHEN ${s} % 97 = 0 THEN 429 ELSE 200 END,
    CASE WHEN ${s} % 50 = 0 THEN 'upstream_error' WHEN ${s} % 97 = 0 THEN 'upstream_rate_limited' END,
    CASE WHEN ${s} % 50 = 0 OR ${s} % 97 = 0 THEN 0 ELSE 20 + ${s} % 1000 END, ${f}, ${f}, 40 + ${s} % 300, 30 + ${s} % 200, NULL, '[]', NULL,
    ${end - 30 * DAY} + ${s} * ${step}, 10 + ${s} % 900, 5 + ${s} % 400`;
}

const COLUMNS = `id, request_id, org_id, project_id, api_key_id, modality, requested_model, used_model, used_provider, status, error_code,
  cost_micros, cost_estimated, byok, duration_ms, ttfb_ms, prompt, attempts, extra, created_at, prompt_tokens, completion_tokens`;

function fillSqlite(file, orgs) {
  const db = new Database(file);
  try {
    for (const o of orgs) {
      db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${o.count - 1})
        INSERT INTO request_logs (${COLUMNS}) SELECT ${rowsSql('sqlite', o)} FROM n`);
    }
    // The SQLite store writes the hourly usage sums with each log batch; rows written in SQL need them added the same way.
    db.exec(`INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens, completion_tokens)
      SELECT org_id, (created_at / 3600000) * 3600000, COALESCE(project_id, ''), COALESCE(api_key_id, ''), COALESCE(requested_model, ''), COUNT(*),
        SUM(status >= 400), SUM(cost_micros), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
      FROM request_logs WHERE org_id IS NOT NULL GROUP BY 1, 2, 3, 4, 5`);
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
}

async function fillPostgres(url, orgs) {
  const schema = new URL(url).searchParams.get('schema');
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    for (const o of orgs) await client.query(`INSERT INTO request_logs (${COLUMNS}) SELECT ${rowsSql('postgres', o)} FROM generate_series(0, ${o.count - 1}) AS g(i)`);
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

async function pgReachable() {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function dropSchema(schema) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
  } finally {
    await client.end();
  }
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/**
 * The queries the console makes: each is timed over `n` sequential HTTP requests (client
 * side, through auth and serialisation) and, with `filter`, also as the store call alone
 * in this process (the SQL's own cost, less exposed to a busy machine's scheduling).
 */
function queries(org, ids, end) {
  const dayStart = Date.parse(`${new Date(end - 15 * DAY).toISOString().slice(0, 10)}T00:00:00Z`);
  const from30 = end - 30 * DAY;
  const last30 = `from=${new Date(from30).toISOString()}&to=${new Date(end + 1000).toISOString()}`;
  const list = (name, query, filter, extra = {}) => ({ name, path: `/api/v1/orgs/${org}/logs?limit=50${query}`, n: 200, filter: { orgId: org, ...filter }, ...extra });
  return [
    list('list, first page (50)', '', {}),
    list('list, next pages by cursor', '', {}, { cursor: true }),
    list('filter: project', `&project=${ids.web}`, { projectId: ids.web }),
    list('filter: key', `&key=${ids.webKey}`, { apiKeyId: ids.webKey }),
    list('filter: model', '&model=claude-3-5-haiku', { model: 'claude-3-5-haiku' }),
    list('filter: errors', '&status=error', { status: 'error' }),
    list('filter: status 429', '&status=429', { status: 429 }),
    list('filter: one day', `&from=${new Date(dayStart).toISOString()}&to=${new Date(dayStart + DAY).toISOString()}`, { from: dayStart, to: dayStart + DAY }),
    list('filter: project + model + errors', `&project=${ids.web}&model=gpt-4o&status=error`, { projectId: ids.web, model: 'gpt-4o', status: 'error' }),
    // Search (docs/management.md, "Search"): each term an indexed query, merged. The store call is given the terms the route resolves.
    list('search: model text', '&q=claude-3-5-haiku', { search: { models: ['claude-3-5-haiku'], keyIds: [], errorCodes: [] } }),
    list('search: error words', '&q=upstream', { search: { models: ['upstream'], keyIds: [], errorCodes: ['upstream_rate_limited', 'upstream_error'] } }),
    list('search: key prefix', `&q=${ids.webKeyPrefix}`, { search: { models: [ids.webKeyPrefix], keyIds: [ids.webKey], errorCodes: [] } }),
    list('search: req_ id prefix', '&q=req_b00000000000000123', { search: { models: ['req_b00000000000000123'], keyIds: [], errorCodes: [], requestIdPrefix: 'req_b00000000000000123' } }),
    list('search + one day', `&q=upstream&from=${new Date(dayStart).toISOString()}&to=${new Date(dayStart + DAY).toISOString()}`,
      { from: dayStart, to: dayStart + DAY, search: { models: ['upstream'], keyIds: [], errorCodes: ['upstream_rate_limited', 'upstream_error'] } }),
    list('search + 7 days + project', `&q=gpt-4o&project=${ids.web}&from=${new Date(end - 7 * DAY).toISOString()}&to=${new Date(end).toISOString()}`,
      { projectId: ids.web, from: end - 7 * DAY, to: end, search: { models: ['gpt-4o', 'gpt-4o-mini'], keyIds: [], errorCodes: [] } }),
    { name: 'latency p50/p95 by day, 30 days', path: `/api/v1/orgs/${org}/latency?${last30}`, n: 10 },
    { name: 'usage by day, 30 days', path: `/api/v1/orgs/${org}/usage?group_by=day&${last30}`, n: 10, usage: ['day'], filter: { orgId: org, from: from30, to: end + 1000 } },
    { name: 'usage by model and project, 30 days', path: `/api/v1/orgs/${org}/usage?group_by=model,project&${last30}`, n: 10, usage: ['model', 'project'], filter: { orgId: org, from: from30, to: end + 1000 } },
    { name: 'overview', path: `/api/v1/orgs/${org}/overview`, n: 10 },
  ];
}

/** The store call of a query, timed in this process: `n` calls, following cursors like the HTTP run. */
async function measureStore(store, q) {
  const times = [];
  let cursor;
  for (let i = 0; i < q.n; i++) {
    const t0 = performance.now();
    if (q.usage) await store.logQuery.usage(q.filter, q.usage);
    else {
      const rows = await store.logQuery.list(q.filter, 51, q.cursor ? cursor : undefined);
      const last = rows[49];
      cursor = last ? { createdAt: last.createdAt, requestId: last.requestId } : undefined;
    }
    times.push(performance.now() - t0);
  }
  return { p50: pct(times, 50), p99: pct(times, 99) };
}

async function measure(url, cookie, q) {
  const headers = { cookie };
  const times = [];
  let cursor = null;
  let rows = 0;
  for (let i = 0; i < q.n; i++) {
    const path = q.cursor && cursor ? `${q.path}&cursor=${cursor}` : q.path;
    const t0 = performance.now();
    const res = await fetch(url + path, { headers });
    const body = await res.json();
    times.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`${q.name}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    rows = Array.isArray(body.data) ? body.data.length : rows;
    if (q.cursor) cursor = body.next_cursor;
  }
  return { n: q.n, rows, p50: pct(times, 50), p99: pct(times, 99), max: Math.max(...times) };
}

async function oneStore({ name, dbUrl, tmp, providers, gatewayCli, rows, say }) {
  const config = join(tmp, `logs-${name}.yaml`);
  writeFileSync(config, JSON.stringify({
    server: { host: '127.0.0.1', port: 0 }, database: { url: dbUrl }, log: { level: 'warn' }, providers,
    providers_dir: join(ROOT, 'providers'),
  }));
  const out = (args) => gatewayCli(...args, '--config', config);
  out(['orgs', 'create', 'bench', '--credits', '1000']);
  out(['orgs', 'create', 'neighbour', '--credits', '0']);
  out(['projects', 'create', 'web', '--org', 'bench']);
  const keyOf = (project) => out(['keys', 'create', '--org', 'bench', '--project', project]).trim().split('\n').pop();
  keyOf('default');
  keyOf('web');
  const password = /password \(shown once\): (\S+)/.exec(out(['users', 'create', '--email', 'bench@tollgate.test', '--operator']))[1];
  const ids = await idsOf(dbUrl);
  const end = Date.now();
  const t0 = performance.now();
  const orgs = [
    { org: ids.bench, projects: [ids.web, ids.dflt, ids.dflt, ids.dflt], keys: [ids.webKey, ids.dfltKey, ids.dfltKey, ids.dfltKey], count: rows, end, prefix: 'b' },
    { org: ids.neighbour, projects: Array(4).fill(ids.neighbourProject), keys: Array(4).fill('key_none'), count: Math.ceil(rows / 10), end, prefix: 'n' },
  ];
  if (name === 'sqlite') fillSqlite(dbUrl.slice('sqlite:'.length), orgs);
  else await fillPostgres(dbUrl, orgs);
  const fillS = (performance.now() - t0) / 1000;
  say(`logs ${name}: ${rows.toLocaleString('en-US')} + ${orgs[1].count.toLocaleString('en-US')} rows written in ${fillS.toFixed(1)} s`);
  const gw = await Child.start({ name: `gateway-logs-${name}`, args: [join(ROOT, 'bin', 'gateway.js'), 'serve', '--config', config], cwd: ROOT, ready: /listening on (http:\/\/\S+)/, timeoutMs: 120_000 });
  try {
    const signIn = await fetch(`${gw.url}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@tollgate.test', password }) });
    if (signIn.status !== 200) throw new Error(`sign-in failed: ${signIn.status}`);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0];
    const result = { rows, neighbourRows: orgs[1].count, fillS, queries: {} };
    const { openStore } = await import(join(ROOT, 'dist', 'src', 'store', 'index.js'));
    const store = openStore(dbUrl);
    try {
      for (const q of queries(ids.bench, ids, end)) {
        await measure(gw.url, cookie, { ...q, n: Math.min(q.n, 3) }); // warm-up
        const m = await measure(gw.url, cookie, q);
        if (q.filter) m.store = await measureStore(store, q);
        result.queries[q.name] = m;
        const sql = m.store ? `; the store call alone p50 ${m.store.p50.toFixed(2)} ms, p99 ${m.store.p99.toFixed(2)} ms` : '';
        say(`logs ${name.padEnd(8)} ${q.name.padEnd(38)} HTTP p50 ${m.p50.toFixed(1).padStart(7)} ms, p99 ${m.p99.toFixed(1).padStart(7)} ms${sql}`);
      }
      result.export = await measureExport(gw, cookie, ids.bench, say, name);
    } finally {
      await store.close();
    }
    return result;
  } finally {
    await gw.stop();
  }
}

/**
 * The whole log as CSV (`GET …/logs/export`): rows and bytes received, the time, and the
 * gateway's resident memory before and at its highest while streaming (read from /proc
 * every 100 ms): the export holds a page, not the rows.
 */
async function measureExport(gw, cookie, org, say, name) {
  const rss = () => {
    try {
      return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${gw.pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;
    } catch {
      return NaN;
    }
  };
  const before = rss();
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, rss()); }, 100);
  const t0 = performance.now();
  const res = await fetch(`${gw.url}/api/v1/orgs/${org}/logs/export?format=csv`, { headers: { cookie } });
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body) {
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines++;
  }
  clearInterval(timer);
  const s = (performance.now() - t0) / 1000;
  const out = { rows: lines - 1, bytes, s, rssBeforeMB: before / 2 ** 20, rssPeakMB: peak / 2 ** 20 };
  say(`logs ${name.padEnd(8)} export CSV: ${out.rows.toLocaleString('en-US')} rows, ${(bytes / 2 ** 20).toFixed(1)} MB in ${s.toFixed(1)} s; gateway RSS ${out.rssBeforeMB.toFixed(0)} → peak ${out.rssPeakMB.toFixed(0)} MB`);
  return out;
}

/** The ids the CLI made, read back from the database. */
async function idsOf(dbUrl) {
  const sql = `SELECT o.name AS org_name, o.id AS org_id, p.name AS project, p.id AS project_id, k.id AS key_id, k.prefix AS key_prefix
    FROM orgs o JOIN projects p ON p.org_id = o.id LEFT JOIN api_keys k ON k.project_id = p.id`;
  const rows = await readRows(dbUrl, sql, PG_URL);
  const find = (org, project) => rows.find((r) => r.org_name === org && r.project === project);
  return {
    bench: find('bench', 'default').org_id, dflt: find('bench', 'default').project_id, web: find('bench', 'web').project_id,
    dfltKey: find('bench', 'default').key_id, webKey: find('bench', 'web').key_id, webKeyPrefix: find('bench', 'web').key_prefix,
    neighbour: find('neighbour', 'default').org_id, neighbourProject: find('neighbour', 'default').project_id,
  };
}

export async function logsScenario({ tmp, say, results, providers, gatewayCli, rows }) {
  results.logs = {};
  say(`logs: ${rows.toLocaleString('en-US')} request-log rows per store, then the management API's list, filters and usage over HTTP`);
  results.logs.sqlite = await oneStore({ name: 'sqlite', dbUrl: `sqlite:${join(tmp, 'logs.db')}`, tmp, providers, gatewayCli, rows, say });
  if (!(await pgReachable())) {
    results.logs.postgres = { reason: `PostgreSQL not reachable at ${PG_URL.replace(/\/\/[^@]*@/, '//***@')}` };
    say(`logs postgres: skipped (${results.logs.postgres.reason})`);
    return;
  }
  const schema = `tollgate_bench_${process.pid}`;
  const u = new URL(PG_URL);
  u.searchParams.set('schema', schema);
  try {
    results.logs.postgres = await oneStore({ name: 'postgres', dbUrl: u.toString(), tmp, providers, gatewayCli, rows, say });
  } finally {
    await dropSchema(schema);
  }
}

/** The markdown table of the scenario: p50/p99 per query and store. */
export function logsMarkdown(logs) {
  const stores = Object.keys(logs).filter((s) => logs[s].queries);
  if (stores.length === 0) return Object.entries(logs).map(([s, v]) => `- ${s}: ${v.reason}`).join('\n');
  const names = Object.keys(logs[stores[0]].queries);
  const f = (x) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x.toFixed(1)) : '—');
  const cells = (q) => `${f(q?.p50)} | ${f(q?.p99)} | ${f(q?.store?.p50)} | ${f(q?.store?.p99)}`;
  const lines = [
    `Rows: ${stores.map((s) => `${s} ${logs[s].rows.toLocaleString('en-US')} + ${logs[s].neighbourRows.toLocaleString('en-US')} of another org (written in ${f(logs[s].fillS)} s)`).join('; ')}. `
      + 'HTTP: the console\'s request (auth, query, JSON); store: the same query as a call in the benchmark process. Milliseconds.',
    '',
    `| query | ${stores.map((s) => `${s} HTTP p50 | HTTP p99 | store p50 | store p99`).join(' | ')} |`,
    `|---|${stores.map(() => '---:|---:|---:|---:').join('|')}|`,
    ...names.map((n) => `| ${n} | ${stores.map((s) => cells(logs[s].queries[n])).join(' | ')} |`),
  ];
  const exports = stores.filter((s) => logs[s].export).map((s) => {
    const e = logs[s].export;
    return `\n\nExport (${s}): ${e.rows.toLocaleString('en-US')} rows as CSV, ${f(e.bytes / 2 ** 20)} MB in ${f(e.s)} s; the gateway's RSS ${f(e.rssBeforeMB)} MB before, ${f(e.rssPeakMB)} MB at most while streaming.`;
  }).join('');
  const skipped = Object.entries(logs).filter(([, v]) => v.reason).map(([s, v]) => `\n\n${s}: not measured (${v.reason})`).join('');
  return lines.join('\n') + exports + skipped;
}
