#!/usr/bin/env node
// Micro-benchmark of the per-request SQLite work of the default configuration (reserve,
// settle, one request-log row in batches), as the store does it today and as the
// profile's proposals would do it. Single process, no HTTP: µs of the event loop per
// request, and the disk writes behind them.
// Usage: node bench/sqlite-ledger.mjs [--dir /tmp] [--requests 20000]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

const { values: args } = parseArgs({ options: { dir: { type: 'string', default: '/tmp' }, requests: { type: 'string', default: '20000' } } });
const N = Number(args.requests);
const BATCH = 100; // request-log rows per flush: ~200 ms of traffic at 500 req/s

const TABLES = (opt) => `
CREATE TABLE orgs (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, balance_micros INTEGER NOT NULL CHECK (balance_micros >= 0),
  retention TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE reservations (request_id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), amount_micros INTEGER NOT NULL,
  created_at INTEGER NOT NULL)${opt.withoutRowid ? ' WITHOUT ROWID' : ''};
CREATE TABLE ledger (id INTEGER PRIMARY KEY${opt.autoincrement ? ' AUTOINCREMENT' : ''}, org_id TEXT NOT NULL REFERENCES orgs(id), request_id TEXT,
  kind TEXT NOT NULL, amount_micros INTEGER NOT NULL, note TEXT, created_at INTEGER NOT NULL);
CREATE INDEX ledger_org ON ledger(org_id);
CREATE TABLE request_logs (id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT, api_key_id TEXT, modality TEXT NOT NULL,
  requested_model TEXT, used_model TEXT, used_provider TEXT, status INTEGER NOT NULL, error_code TEXT, cost_micros INTEGER NOT NULL,
  cost_estimated INTEGER NOT NULL, byok INTEGER NOT NULL, duration_ms INTEGER NOT NULL, ttfb_ms INTEGER, prompt TEXT,
  attempts TEXT NOT NULL, extra TEXT, created_at INTEGER NOT NULL);
CREATE INDEX request_logs_org_time ON request_logs(org_id, modality, created_at);`;

function open(dir, opt) {
  const db = new Database(join(dir, `${opt.name}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  if (opt.checkpointPages) db.pragma(`wal_autocheckpoint = ${opt.checkpointPages}`);
  db.exec(TABLES(opt));
  db.prepare("INSERT INTO orgs VALUES ('org_1', 'bench', 1000000000000, 'standard', 0)").run();
  const s = {
    debit: db.prepare('UPDATE orgs SET balance_micros = balance_micros - ? WHERE id = ? AND balance_micros >= ?'),
    credit: db.prepare('UPDATE orgs SET balance_micros = balance_micros + ? WHERE id = ?'),
    insertReservation: db.prepare('INSERT INTO reservations (request_id, org_id, amount_micros, created_at) VALUES (?, ?, ?, ?)'),
    reservation: db.prepare('SELECT org_id, amount_micros FROM reservations WHERE request_id = ?'),
    deleteReservation: db.prepare('DELETE FROM reservations WHERE request_id = ?'),
    ledger: db.prepare('INSERT INTO ledger (org_id, request_id, kind, amount_micros, note, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
    insertLog: db.prepare(`INSERT OR REPLACE INTO request_logs VALUES (@id, @request_id, @org_id, @api_key_id, @modality, @requested_model,
      @used_model, @used_provider, @status, @error_code, @cost_micros, @cost_estimated, @byok, @duration_ms, @ttfb_ms, @prompt, @attempts, @extra, @created_at)`),
  };
  return { db, s };
}

const reserveBody = (s) => (orgId, id, amount) => {
  if (s.debit.run(amount, orgId, amount).changes === 0) return false;
  s.insertReservation.run(id, orgId, amount, Date.now());
  return true;
};
const settleBody = (s) => (id, cost) => {
  const r = s.reservation.get(id);
  if (!r) return 0;
  const charged = Math.min(cost, r.amount_micros);
  s.credit.run(r.amount_micros - charged, r.org_id);
  s.deleteReservation.run(id);
  if (charged > 0) s.ledger.run(r.org_id, id, 'charge', -charged, null, Date.now());
  return charged;
};
const logRow = (id) => ({
  id: `log_${id.slice(4)}`, request_id: id, org_id: 'org_1', api_key_id: 'key_1', modality: 'chat', requested_model: 'gpt-4o-mini',
  used_model: 'gpt-4o-mini', used_provider: 'openai', status: 200, error_code: null, cost_micros: 12, cost_estimated: 0, byok: 0,
  duration_ms: 3, ttfb_ms: 3, prompt: 'You are a concise assistant.\nWrite one sentence about toll roads.',
  attempts: '[{"provider":"openai","model":"gpt-4o-mini","status":200,"error":null,"durationMs":2}]', extra: null, created_at: Date.now(),
});
const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const randomId = () => `req_${Array.from({ length: 24 }, () => ALPHABET[Math.floor(Math.random() * 62)]).join('')}`;
let seq = 0;
/** Time-ordered: a millisecond timestamp and a counter before the random part, so b-tree inserts append. */
const sortableId = () => `req_${Date.now().toString(36).padStart(9, '0')}${(seq++ % 1296).toString(36).padStart(2, '0')}${randomId().slice(4, 17)}`;

/** No ledger work at all: only the log rows are written. */
const logOnly = () => ({ reserve: () => true, settle: () => 0 });
/** Reserve and settle as the store does today: a db.transaction(fn) built on every call. */
const perCallTx = ({ db, s }) => ({
  reserve: (id) => db.transaction(() => reserveBody(s)('org_1', id, 9830))(),
  settle: (id) => db.transaction(() => settleBody(s)(id, 12))(),
});
/** The same SQL, its transaction functions built once. */
const cachedTx = ({ db, s }) => {
  const r = db.transaction(reserveBody(s));
  const st = db.transaction(settleBody(s));
  return { reserve: (id) => r('org_1', id, 9830), settle: (id) => st(id, 12) };
};

/** Settlements queued and applied with the log batch, one transaction per flush. */
const batchedSettle = ({ db, s }) => {
  const r = db.transaction(reserveBody(s));
  const body = settleBody(s);
  const many = db.transaction((ids) => {
    for (const id of ids) body(id, 12);
  });
  return { reserve: (id) => r('org_1', id, 9830), settleMany: many };
};
/** Reservations held in memory; each flush writes the net balance change, the ledger rows and the log rows. */
const memoryReservations = ({ s }) => {
  let available = 1e12; // refreshed from the database every second in a real implementation
  const held = new Map();
  return {
    reserve: (id) => {
      if (available < 9830) return false;
      available -= 9830;
      held.set(id, 9830);
      return true;
    },
    settleMany: (ids) => {
      let charged = 0;
      for (const id of ids) {
        const amount = held.get(id);
        held.delete(id);
        available += amount - 12;
        charged += 12;
        s.ledger.run('org_1', id, 'charge', -12, null, Date.now());
      }
      s.debit.run(charged, 'org_1', charged);
    },
  };
};

/** Today's schema, and the lean one: the ledger without AUTOINCREMENT, reservations WITHOUT ROWID. */
const TODAY_SCHEMA = { autoincrement: true };
const LEAN_SCHEMA = { autoincrement: false, withoutRowid: true };

/** The variants, one a row: how each request's reserve/settle/log reaches SQLite. */
const VARIANTS = [
  { name: 'log-only', schema: TODAY_SCHEMA, make: logOnly, note: 'only the request-log rows (batched), random request ids: what the log alone costs' },
  { name: 'log-only, sortable ids', schema: TODAY_SCHEMA, make: logOnly, sortable: true, note: 'the same with time-ordered request ids (inserts append to the b-trees)' },
  { name: 'today', schema: TODAY_SCHEMA, make: perCallTx, note: 'reserve + settle: one db.transaction(fn) built per call; log rows in batches' },
  { name: 'today, sortable ids', schema: TODAY_SCHEMA, make: perCallTx, sortable: true, note: 'as today, with time-ordered request ids' },
  { name: 'cached-tx', schema: TODAY_SCHEMA, make: cachedTx, note: 'same SQL, transaction functions built once' },
  { name: 'cached-tx+schema', schema: LEAN_SCHEMA, make: cachedTx, note: '+ ledger without AUTOINCREMENT, reservations WITHOUT ROWID' },
  { name: 'batched-settle', schema: LEAN_SCHEMA, make: batchedSettle, note: '+ settlements queued and applied with the log batch (one transaction per flush)' },
  {
    name: 'memory-reservations', schema: LEAN_SCHEMA, make: memoryReservations,
    note: 'reservations held in memory (single gateway process per SQLite file); each flush writes the net balance change per org, the ledger rows and the log rows in one transaction',
  },
];

function io() {
  const t = Object.fromEntries(readFileSync('/proc/self/io', 'utf8').trim().split('\n').map((l) => l.split(': ')).map(([k, v]) => [k, Number(v)]));
  return { syscw: t.syscw, writeBytes: t.write_bytes, wchar: t.wchar };
}

const dir = mkdtempSync(join(args.dir, 'tollgate-sqlite-micro-'));
console.log(`${N} requests per variant, log rows flushed every ${BATCH}; database in ${dir}\n`);
console.log('| variant | µs per request (event loop) | write syscalls / req | KB written / req | what |');
console.log('|---|---:|---:|---:|---|');
try {
  for (const v of VARIANTS) {
    const handle = open(dir, { name: v.name, ...v.schema });
    const ops = v.make(handle);
    const insertLogs = handle.db.transaction((rows) => {
      for (const row of rows) handle.s.insertLog.run(row);
    });
    const flushBatch = (ids) => {
      if (ids.length === 0) return;
      if (ops.settleMany) {
        handle.db.transaction(() => {
          ops.settleMany(ids);
          insertLogs(ids.map(logRow));
        })();
      } else insertLogs(ids.map(logRow));
    };
    const ids = Array.from({ length: N + 1000 }, v.sortable ? sortableId : randomId);
    // warm-up
    for (let i = 0; i < 1000; i++) {
      ops.reserve(ids[N + i]);
      if (ops.settle) ops.settle(ids[N + i]);
    }
    flushBatch(ids.slice(N, N + 1000));
    const io0 = io();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let pending = [];
    for (let i = 0; i < N; i++) {
      ops.reserve(ids[i]);
      if (ops.settle) ops.settle(ids[i]);
      pending.push(ids[i]);
      if (pending.length === BATCH) {
        flushBatch(pending);
        pending = [];
      }
    }
    flushBatch(pending);
    const us = ((performance.now() - t0) * 1000) / N;
    const cpu = process.cpuUsage(cpu0);
    const io1 = io();
    handle.db.close();
    console.log(`| ${v.name} | ${us.toFixed(1)} (CPU ${((cpu.user + cpu.system) / N).toFixed(1)}) | ${((io1.syscw - io0.syscw) / N).toFixed(1)} | ${((io1.wchar - io0.wchar) / N / 1024).toFixed(1)} | ${v.note} |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
