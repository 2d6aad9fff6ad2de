import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import type { Org } from '../model/records.js';
import { migrateSqlite } from './migrations/index.js';
import { SqliteStore } from './sqlite.js';
import { BufferedSqliteLedger, CHARGE_STATEMENTS } from './sqlite-ledger.js';
import { InlineWriter } from './sqlite-writer.js';

/** The gateway's own SQLite ledger: in-memory reservations, batched charges, one server process per file. */
const opened: SqliteStore[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

function file(): string {
  return join(mkdtempSync(join(tmpdir(), 'tollgate-ledger-')), 'g.db');
}
function open(path: string, server: boolean, balanceTtlMs?: number): SqliteStore {
  const s = new SqliteStore(path, Date.now, { ownLedger: server, balanceTtlMs });
  opened.push(s);
  return s;
}
/** A server process's store (`balanceTtlMs` its balance cache) on a new file with an org holding `credits`, and how to open an admin command's store beside it. */
async function serverWithOrg(credits: number, balanceTtlMs?: number): Promise<{ path: string; server: SqliteStore; org: Org; admin: () => SqliteStore }> {
  const path = file();
  const server = open(path, true, balanceTtlMs);
  const org = await server.createOrg('o', credits, 'standard');
  return { path, server, org, admin: () => open(path, false) };
}
const raw = (path: string, sql: string, ...params: unknown[]) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).all(...params);
  } finally {
    db.close();
  }
};

describe('buffered SQLite ledger', () => {
  it('reserves and settles without writing, then writes the charge with the log batch', async () => {
    const { path, server, org } = await serverWithOrg(1000);
    const req = newId('req');
    expect(await server.reserve(org.id, req, 600)).toBe(true);
    expect(raw(path, 'SELECT * FROM reservations')).toEqual([]);
    expect((await server.getOrg(org.id))?.balanceMicros).toBe(400);
    expect(await server.reserve(org.id, newId('req'), 401)).toBe(false);
    expect(await server.settle(req, 250)).toBe(250);
    expect((await server.getOrg(org.id))?.balanceMicros).toBe(750);
    expect(raw(path, 'SELECT balance_micros FROM orgs')).toEqual([{ balance_micros: 1000 }]);
    await server.insertLogs([]);
    expect(raw(path, 'SELECT balance_micros FROM orgs')).toEqual([{ balance_micros: 750 }]);
    expect(raw(path, "SELECT amount_micros FROM ledger WHERE kind = 'charge'")).toEqual([{ amount_micros: -250 }]);
    expect(await server.sumCharges(org.id)).toBe(250);
  });

  it('keeps a charge held while its batch is on the writer thread, and after a failed batch writes it with the next, once', async () => {
    const { path, server, org } = await serverWithOrg(1000, 0);
    const req = newId('req');
    expect(await server.reserve(org.id, req, 600)).toBe(true);
    expect(await server.settle(req, 250)).toBe(250);
    // A row the table refuses (status is NOT NULL): the whole batch rolls back, the charge with it.
    const bad = { requestId: newId('req'), status: null } as unknown as Parameters<SqliteStore['insertLogs']>[0][number];
    await expect(server.insertLogs([bad])).rejects.toThrow(/NOT NULL/);
    expect(raw(path, 'SELECT balance_micros FROM orgs')).toEqual([{ balance_micros: 1000 }]);
    expect((await server.getOrg(org.id))?.balanceMicros).toBe(750);
    expect(await server.reserve(org.id, newId('req'), 751)).toBe(false);
    const writing = server.insertLogs([]);
    expect((await server.getOrg(org.id))?.balanceMicros).toBe(750); // in flight: neither dropped nor counted twice
    await writing;
    expect((await server.getOrg(org.id))?.balanceMicros).toBe(750);
    expect(raw(path, 'SELECT balance_micros FROM orgs')).toEqual([{ balance_micros: 750 }]);
    expect(raw(path, "SELECT amount_micros FROM ledger WHERE kind = 'charge'")).toEqual([{ amount_micros: -250 }]);
    expect(await server.reserve(org.id, newId('req'), 750)).toBe(true);
  });

  it('sees credits an admin command adds to the file while it runs (once its cached balance expires)', async () => {
    const { server, org, admin } = await serverWithOrg(100, 0);
    expect(await server.reserve(org.id, newId('req'), 100)).toBe(true);
    expect(await server.reserve(org.id, newId('req'), 50)).toBe(false);
    await admin().addCredits(org.id, 50, 'top-up');
    expect(await server.reserve(org.id, newId('req'), 50)).toBe(true);
    expect(await server.reserve(org.id, newId('req'), 1)).toBe(false);
  });

  it('caches the stored balance for a moment, keeping it exact through its own writes', async () => {
    const { server, org, admin } = await serverWithOrg(1000, 60_000);
    const req = newId('req');
    expect(await server.reserve(org.id, req, 600)).toBe(true);
    await server.settle(req, 600);
    await server.insertLogs([]); // charge written: the cached balance follows it
    expect(await server.reserve(org.id, newId('req'), 401)).toBe(false);
    expect(await server.reserve(org.id, newId('req'), 400)).toBe(true);
    await admin().addCredits(org.id, 500, 'top-up'); // another process: not seen until the cache expires
    expect(await server.reserve(org.id, newId('req'), 1)).toBe(false);
    await server.addCredits(org.id, 10, 'own'); // its own write: seen at once
    expect(await server.reserve(org.id, newId('req'), 510)).toBe(true);
  });

  it('grants exactly what the balance covers under many concurrent reservations', async () => {
    const { server, org } = await serverWithOrg(10_000);
    const results = await Promise.all(Array.from({ length: 50 }, () => server.reserve(org.id, newId('req'), 300)));
    expect(results.filter(Boolean)).toHaveLength(33);
    expect((await server.getOrg(org.id))?.balanceMicros).toBe(100);
  });

  it('writes charges still in memory when it closes', async () => {
    const path = file();
    const server = new SqliteStore(path, Date.now, { ownLedger: true });
    const org = await server.createOrg('o', 1000, 'standard');
    const req = newId('req');
    await server.reserve(org.id, req, 500);
    await server.settle(req, 123);
    await server.close();
    expect(raw(path, 'SELECT balance_micros FROM orgs')).toEqual([{ balance_micros: 877 }]);
  });

  it('charges once when a batch runs twice (its answer lost after the commit)', async () => {
    const db = new Database(file());
    try {
      migrateSqlite(db);
      db.prepare("INSERT INTO orgs (id, name, balance_micros, retention, created_at) VALUES ('org_x', 'x', 1000, 'standard', 0)").run();
      const writer = new InlineWriter(db, CHARGE_STATEMENTS);
      const ledger = new BufferedSqliteLedger(db, Date.now, async (steps) => {
        await writer.run(steps);
        await writer.run(steps); // the replay
      });
      expect(await ledger.reserve('org_x', 'req_a', 500)).toBe(true);
      expect(ledger.settle('req_a', 300)).toBe(300);
      await ledger.flush();
      expect(db.prepare('SELECT balance_micros FROM orgs').all()).toEqual([{ balance_micros: 700 }]);
      expect(db.prepare("SELECT request_id, amount_micros FROM ledger WHERE kind = 'charge'").all()).toEqual([{ request_id: 'req_a', amount_micros: -300 }]);
      expect(ledger.heldFor('org_x')).toBe(0);
      ledger.close();
    } finally {
      db.close();
    }
  });

  it('refuses a second server process on the same file, and allows one after the first closed', async () => {
    const path = file();
    const first = new SqliteStore(path, Date.now, { ownLedger: true });
    expect(() => new SqliteStore(path, Date.now, { ownLedger: true })).toThrow(/another gateway process .* is serving this SQLite database.*use PostgreSQL/);
    await first.close();
    open(path, true);
  });

  it('takes over from a gateway process on this host that died without releasing', async () => {
    const path = file();
    const admin = open(path, false);
    await admin.leases.tryAcquire('sqlite-ledger', `${hostname()}:2147483646:dead`, 60_000, Date.now());
    expect(() => open(path, true)).not.toThrow();
  });
});
