import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MAX_BALANCE_MICROS, type Micros } from '../lib/money.js';
import { newId } from '../lib/ids.js';
import type { LeaseStore, MediaStore } from './media.js';
import { SqliteRecordStore, type RecordStore } from './records.js';
import { BufferedSqliteLedger, CHARGE_STATEMENTS } from './sqlite-ledger.js';
import { InlineWriter, ThreadWriter, type BatchWriter, type WriteStep } from './sqlite-writer.js';
import { SqliteLeaseStore, SqliteMediaStore } from './media-sqlite.js';
import { migrateSqlite } from './migrations/index.js';
import type { SecretBox } from '../lib/secrets.js';
import { LOG_COLUMNS, toLogDb, toOrg, type LogDbRow, type OrgRow } from './rows.js';
import { sqliteDb } from './sql.js';
import { SqlStoreBase } from './sql-store.js';
import { DEFAULT_PROJECT } from './tenancy.js';
import { USAGE_STATEMENTS, usageSteps } from './usage-rollup.js';
import { creditRefused, debitRefused, DuplicateError, INITIAL_CREDITS_NOTE, type LedgerAudit, type LogRow, type Org, type Retention, type Settlement } from '../model/records.js';
import type { Store } from './types.js';

/** The statements of the gateway's batched writes (request-log rows, their usage sums, the charges). */
const WRITES = {
  ...CHARGE_STATEMENTS,
  ...USAGE_STATEMENTS,
  insertLog: `INSERT OR REPLACE INTO request_logs (${LOG_COLUMNS.map(([c]) => c).join(', ')}) VALUES (${LOG_COLUMNS.map(() => '?').join(', ')})`,
} as const;

/** When charges that no log batch took are written on their own (every charged request logs a row, flushed sooner). */
const CHARGE_BACKSTOP_MS = 5_000;

/** A log row's values in LOG_COLUMNS order, booleans as SQLite's 0/1. */
function logParams(row: LogDbRow): unknown[] {
  return LOG_COLUMNS.map(([c]) => (typeof row[c] === 'boolean' ? (row[c] ? 1 : 0) : row[c]));
}

/**
 * The embedded store: one SQLite file in WAL mode, so the CLI can change orgs, keys
 * and credits while the server runs on the same file. Balance updates are single
 * conditional UPDATEs, which SQLite serialises, so concurrent reservations cannot
 * overdraw.
 */
export class SqliteStore extends SqlStoreBase implements Store {
  readonly kind = 'sqlite' as const;
  readonly media: MediaStore;
  readonly leases: LeaseStore;
  readonly records: RecordStore;
  private readonly db: Database.Database;
  private readonly stmt;
  /** Runs the log and charge batches: on a thread of its own for the gateway on a file, else inline. */
  private readonly writer: BatchWriter<keyof typeof WRITES>;
  private closing: Promise<void> | undefined;
  /** Set when this process owns the file's ledger (the gateway); the CLI writes through. */
  private readonly buffered: BufferedSqliteLedger | undefined;

  constructor(
    path: string, now: () => number = Date.now,
    opts: { ownLedger?: boolean; balanceTtlMs?: number; secrets?: SecretBox } = {},
  ) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    migrateSqlite(db);
    super(sqliteDb(db), now, opts.secrets);
    this.db = db;
    this.media = new SqliteMediaStore(db);
    this.leases = new SqliteLeaseStore(db);
    this.records = new SqliteRecordStore(db);
    this.stmt = {
      orgById: db.prepare<[string], OrgRow>('SELECT * FROM orgs WHERE id = ?'),
      debit: db.prepare('UPDATE orgs SET balance_micros = balance_micros - ? WHERE id = ? AND balance_micros >= ?'),
      credit: db.prepare('UPDATE orgs SET balance_micros = balance_micros + ? WHERE id = ?'),
      topUp: db.prepare(`UPDATE orgs SET balance_micros = balance_micros + @amount WHERE id = @org AND balance_micros + @amount <= ${MAX_BALANCE_MICROS}`),
      insertReservation: db.prepare('INSERT INTO reservations (request_id, org_id, amount_micros, created_at) VALUES (?, ?, ?, ?)'),
      reservation: db.prepare<[string], { org_id: string; amount_micros: number }>('SELECT org_id, amount_micros FROM reservations WHERE request_id = ?'),
      deleteReservation: db.prepare('DELETE FROM reservations WHERE request_id = ?'),
      ledger: db.prepare('INSERT INTO ledger (org_id, request_id, kind, amount_micros, note, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    };
    const inline = new InlineWriter(db, WRITES);
    this.writer = opts.ownLedger && path !== ':memory:' ? new ThreadWriter(path, WRITES, inline) : inline;
    // Charges ride with the log batch of their rows (the log's flush interval); the ledger's own
    // timer only writes what no batch took, so a crash cannot leave a charge without its row.
    this.buffered = opts.ownLedger
      ? new BufferedSqliteLedger(db, now, (steps) => this.writer.run(steps), CHARGE_BACKSTOP_MS, opts.balanceTtlMs) : undefined;
  }

  /** The stored balance less what this process holds in memory (reserved, or charged and not yet written). */
  private toOrg(row: OrgRow): Org {
    const org = toOrg(row);
    if (this.buffered) org.balanceMicros -= this.buffered.heldFor(org.id);
    return org;
  }

  protected heldFor(orgId: string): Micros {
    return this.buffered?.heldFor(orgId) ?? 0;
  }

  protected async steady(): Promise<void> {
    await this.buffered?.steady();
  }

  /** Writes charges buffered in memory (the audit sums must see them), and waits out a log batch being written. */
  protected async written(): Promise<void> {
    await this.buffered?.flush();
    await this.buffered?.steady();
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.written();
      } finally {
        await this.writer.close();
        this.buffered?.close();
        this.db.close();
      }
    })();
    return this.closing;
  }

  async createOrg(name: string, credits: Micros, retention: Retention, note = INITIAL_CREDITS_NOTE): Promise<Org> {
    if (credits > MAX_BALANCE_MICROS) throw creditRefused(credits, 0);
    const org: Org = { id: newId('org'), name, balanceMicros: credits, retention, createdAt: this.now() };
    try {
      this.db.transaction(() => {
        this.db.prepare('INSERT INTO orgs (id, name, balance_micros, retention, created_at) VALUES (?, ?, ?, ?, ?)')
          .run(org.id, name, credits, retention, org.createdAt);
        this.db.prepare('INSERT INTO projects (id, org_id, name, created_at) VALUES (?, ?, ?, ?)').run(newId('prj'), org.id, DEFAULT_PROJECT, org.createdAt);
        if (credits > 0) this.stmt.ledger.run(org.id, null, 'credit', credits, note, org.createdAt, null);
      })();
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new DuplicateError(`an organization named "${name}" already exists`);
      throw err;
    }
    return org;
  }

  async addCredits(orgId: string, amount: Micros, note: string, actor: string | null = null): Promise<Micros> {
    await this.buffered?.steady();
    return this.db.transaction(() => {
      // The gateway's reservations (and charges not yet written) are in memory and still in the
      // stored balance: a debit takes only what they leave free, so their charges find it.
      const held = this.buffered?.heldFor(orgId) ?? 0;
      const changed = amount >= 0 ? this.stmt.topUp.run({ amount, org: orgId }).changes : this.stmt.debit.run(-amount, orgId, held - amount).changes;
      if (changed === 0) {
        const stored = this.stmt.orgById.get(orgId)?.balance_micros ?? 0;
        throw amount >= 0 ? creditRefused(amount, stored) : debitRefused(-amount, stored - held, held);
      }
      this.stmt.ledger.run(orgId, null, 'credit', amount, note, this.now(), actor);
      this.buffered?.forget(orgId);
      return this.toOrg(this.stmt.orgById.get(orgId) as OrgRow).balanceMicros;
    })();
  }

  async reserve(orgId: string, requestId: string, amount: Micros): Promise<boolean> {
    if (this.buffered) return this.buffered.reserve(orgId, requestId, amount);
    return this.db.transaction(() => {
      if (this.stmt.debit.run(amount, orgId, amount).changes === 0) return false;
      this.stmt.insertReservation.run(requestId, orgId, amount, this.now());
      return true;
    })();
  }

  async settle(requestId: string, cost: Micros): Promise<Micros> {
    if (this.buffered) return this.buffered.settle(requestId, cost);
    return this.db.transaction(() => {
      const r = this.stmt.reservation.get(requestId);
      if (!r) return 0;
      const charged = Math.min(Math.max(cost, 0), r.amount_micros);
      this.stmt.credit.run(r.amount_micros - charged, r.org_id);
      this.stmt.deleteReservation.run(requestId);
      if (charged > 0) this.stmt.ledger.run(r.org_id, requestId, 'charge', -charged, null, this.now(), null);
      return charged;
    })();
  }

  async releaseStaleReservations(olderThan: number): Promise<number> {
    if (this.buffered) return this.buffered.releaseStale(olderThan);
    const stale = this.db.prepare('SELECT request_id FROM reservations WHERE created_at < ?').all(olderThan) as Array<{ request_id: string }>;
    for (const r of stale) await this.settle(r.request_id, 0);
    return stale.length;
  }

  /** Charges here are written from the process's own buffer with the log batch (sqlite-ledger.ts): nothing to spill. */
  settlementsFor(): Settlement[] {
    return [];
  }

  adoptSettlements(settlements: readonly Settlement[]): void {
    if (settlements.length > 0) throw new Error('SQLite keeps its charges in its own file; there are no spilled settlements to adopt');
  }

  async insertLogs(rows: readonly LogRow[]): Promise<void> {
    // Buffered charges go in the same transaction as the log rows: ledger and log agree even after a crash.
    const charges = this.buffered?.take();
    const dbRows = rows.map(toLogDb);
    const steps: WriteStep<keyof typeof WRITES>[] = [...(charges?.steps ?? []), ...usageSteps(dbRows)];
    for (const row of dbRows) steps.push(['insertLog', logParams(row)]);
    try {
      await this.writer.run(steps);
    } catch (err) {
      charges?.unwritten();
      throw err;
    }
    charges?.written();
  }

  async audit(orgId: string): Promise<LedgerAudit> {
    await this.written();
    const row = this.db.prepare(`SELECT COALESCE((SELECT balance_micros FROM orgs WHERE id = @org), 0) AS balance,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE org_id = @org AND kind = 'credit') AS credited,
        (SELECT COALESCE(SUM(-amount_micros), 0) FROM ledger WHERE org_id = @org AND kind = 'charge') AS charged,
        (SELECT COALESCE(SUM(cost_micros), 0) FROM request_logs WHERE org_id = @org AND byok = 0) AS logged,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM reservations WHERE org_id = @org) AS reserved`).get({ org: orgId }) as
      { balance: number; credited: number; charged: number; logged: number; reserved: number };
    const held = this.buffered ? this.buffered.heldFor(orgId) : row.reserved;
    return { credited: row.credited, balance: row.balance, held, charged: row.charged, logged: row.logged };
  }
}
