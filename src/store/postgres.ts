import { formatUsd, MAX_BALANCE_MICROS, type Micros } from '../lib/money.js';
import type { LeaseStore, MediaStore } from './media.js';
import { PostgresRecordStore, type RecordStore } from './records.js';
import { PostgresLeaseStore, PostgresMediaStore, type Query } from './media-postgres.js';
import { newId } from '../lib/ids.js';
import type { SecretBox } from '../lib/secrets.js';
import { LOG_COLUMNS, toLogDb } from './rows.js';
import { PgConnection, storable, type Param, type Scalar } from './postgres-connection.js';
import { SqlStoreBase } from './sql-store.js';
import { PostgresLedger, type PostgresLedgerOptions } from './postgres-ledger.js';
import { DEFAULT_PROJECT } from './tenancy.js';
import { creditRefused, debitRefused, DuplicateError, INITIAL_CREDITS_NOTE, type LedgerAudit, type LogRow, type Org, type Retention, type Settlement } from '../model/records.js';
import type { Store } from './types.js';

/*
 * One statement whatever the batch size: each column travels as one array parameter,
 * so a large batch never meets the 65535-parameter limit of a multi-row VALUES list.
 */
const INSERT_LOGS = `INSERT INTO request_logs (${LOG_COLUMNS.map(([c]) => c).join(', ')})
  SELECT * FROM unnest(${LOG_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')})
  ON CONFLICT (request_id) DO UPDATE SET ${LOG_COLUMNS.filter(([c]) => c !== 'request_id').map(([c]) => `${c} = EXCLUDED.${c}`).join(', ')}`;

export interface PostgresStoreOptions {
  /** Schema holding the tables, created if missing; overrides `?schema=` in the URL. Default: the server's search_path. */
  schema?: string;
  /** The key provider keys are sealed with; without it they can be neither stored nor read. */
  secrets?: SecretBox;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /**
   * Set for a gateway server: it owns reservations under an instance id, heartbeats, reaps
   * dead instances' reservations, and writes charges with their log rows (postgres-ledger.ts).
   * Admin commands leave it unset and write through.
   */
  ledger?: Omit<PostgresLedgerOptions, 'onError'> & { onError?: PostgresLedgerOptions['onError'] };
}

/**
 * The scale-out store: many gateway instances share one PostgreSQL database. Every
 * balance change is a single statement whose conditional UPDATE re-checks the row
 * after waiting for a concurrent writer (READ COMMITTED re-evaluation), so instances
 * cannot overdraw an org between them; the CHECK on the column is the backstop.
 */
export class PostgresStore extends SqlStoreBase implements Store {
  readonly kind = 'postgres' as const;
  readonly media: MediaStore;
  readonly leases: LeaseStore;
  readonly records: RecordStore;
  private readonly conn: PgConnection;
  private closed: Promise<void> | undefined;
  /** The server's ledger (see PostgresStoreOptions.ledger); undefined for admin commands. */
  readonly ledger: PostgresLedger | undefined;

  constructor(url: string, now: () => number = Date.now, opts: PostgresStoreOptions = {}) {
    // Only the server gets the reservation pool (postgres-connection.ts: commits without waiting for the WAL flush).
    const conn = new PgConnection(url, { schema: opts.schema, poolSize: opts.poolSize, reservePool: opts.ledger !== undefined });
    super(conn.sqlDb(), now, opts.secrets);
    this.conn = conn;
    const query: Query = (sql, params) => this.query(sql, params);
    this.media = new PostgresMediaStore(query);
    this.leases = new PostgresLeaseStore(query);
    this.records = new PostgresRecordStore(query);
    this.ledger = opts.ledger && new PostgresLedger((text, params) => this.query(text, params as Param[]), (work) => conn.transaction(work), now, opts.ledger,
      (text, params) => conn.reserveQuery(text, params as Param[]));
    this.ledger?.start();
  }

  protected heldFor(orgId: string): Micros {
    return this.ledger?.heldFor(orgId) ?? 0;
  }

  /** Charges decided in memory are written with their log rows; the stored balance never lags a half-written batch. */
  protected async steady(): Promise<void> {}

  protected async written(): Promise<void> {}

  async close(): Promise<void> {
    this.closed ??= (async () => {
      try {
        await this.ledger?.close();
      } finally {
        await this.conn.end();
      }
    })();
    await this.closed;
  }

  async createOrg(name: string, credits: Micros, retention: Retention, note = INITIAL_CREDITS_NOTE): Promise<Org> {
    if (credits > MAX_BALANCE_MICROS) throw creditRefused(credits, 0);
    const org: Org = { id: newId('org'), name, balanceMicros: credits, retention, createdAt: this.now() };
    try {
      await this.query(`WITH o AS (INSERT INTO orgs (id, name, balance_micros, retention, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id),
        p AS (INSERT INTO projects (id, org_id, name, created_at) SELECT $6, id, $7, $5 FROM o)
        INSERT INTO ledger (org_id, kind, amount_micros, note, created_at) SELECT id, 'credit', $3, $8, $5 FROM o WHERE $3::bigint > 0`,
      [org.id, name, credits, retention, org.createdAt, newId('prj'), DEFAULT_PROJECT, note]);
    } catch (err) {
      if (err instanceof this.conn.pg.DatabaseError && err.code === '23505' && err.constraint === 'orgs_name_key') {
        throw new DuplicateError(`an organization named "${name}" already exists`);
      }
      throw err;
    }
    return org;
  }

  async addCredits(orgId: string, amount: Micros, note: string, actor: string | null = null): Promise<Micros> {
    const [row] = await this.query<{ id: string }>(`WITH u AS (
        UPDATE orgs SET balance_micros = balance_micros + $2::bigint WHERE id = $1 AND balance_micros + $2::bigint >= 0
          AND ($2::bigint <= 0 OR balance_micros + $2::bigint
            + COALESCE((SELECT SUM(s.amount_micros) FROM balance_slices s WHERE s.org_id = $1), 0) <= ${MAX_BALANCE_MICROS})
        RETURNING id),
      l AS (INSERT INTO ledger (org_id, kind, amount_micros, note, created_at, created_by) SELECT id, 'credit', $2, $3, $4, $5 FROM u)
      SELECT id FROM u`, [orgId, amount, note, this.now(), actor]);
    if (!row && amount > 0) throw creditRefused(amount, (await this.getOrg(orgId))?.balanceMicros ?? 0);
    if (!row) {
      // Reservations are already out of the org's row; part of the balance may also sit in running
      // instances' balance slices (postgres-slices.ts): both are out of an admin debit's reach.
      const [h] = await this.query<{ free: number; reserved: number; sliced: number }>(`SELECT
          COALESCE((SELECT balance_micros FROM orgs WHERE id = $1), 0) AS free,
          COALESCE((SELECT SUM(amount_micros) FROM reservations WHERE org_id = $1), 0)::bigint AS reserved,
          COALESCE((SELECT SUM(amount_micros) FROM balance_slices WHERE org_id = $1), 0)::bigint AS sliced`, [orgId]);
      const refused = debitRefused(-amount, h?.free ?? 0, h?.reserved ?? 0);
      if (h && h.sliced > 0) refused.message += `; $${formatUsd(h.sliced)} of it is held by running gateway instances (balance slices), and what they leave unused returns to the org within a heartbeat`;
      throw refused;
    }
    // The balance as getOrg shows it (the slices counted), not the org's row alone.
    return (await this.getOrg(orgId))?.balanceMicros ?? 0;
  }

  /*
   * The debit and the reservation row are one statement, hence one transaction: a
   * duplicate request id fails the insert and undoes the debit with it. One round trip
   * instead of four keeps pooled connections free on the hot path.
   */
  async reserve(orgId: string, requestId: string, amount: Micros): Promise<boolean> {
    if (this.ledger) return this.ledger.reserve(orgId, requestId, amount);
    const rows = await this.query(`WITH debit AS (
        UPDATE orgs SET balance_micros = balance_micros - $3::bigint WHERE id = $1 AND balance_micros >= $3::bigint RETURNING id)
      INSERT INTO reservations (request_id, org_id, amount_micros, created_at) SELECT $2, id, $3, $4 FROM debit RETURNING request_id`,
    [orgId, requestId, amount, this.now()]);
    return rows.length > 0;
  }

  /*
   * DELETE … RETURNING claims the reservation: a second settle of the same request
   * waits on the row lock, then finds nothing and charges nothing.
   */
  async settle(requestId: string, cost: Micros): Promise<Micros> {
    const deferred = this.ledger?.settle(requestId, cost);
    if (deferred !== undefined) return deferred;
    const [row] = await this.query<{ charged: number }>(`WITH r AS (DELETE FROM reservations WHERE request_id = $1 RETURNING org_id, amount_micros),
      c AS (SELECT org_id, amount_micros, LEAST(GREATEST($2::bigint, 0), amount_micros) AS charged FROM r),
      refund AS (UPDATE orgs SET balance_micros = orgs.balance_micros + c.amount_micros - c.charged FROM c WHERE orgs.id = c.org_id),
      l AS (INSERT INTO ledger (org_id, request_id, kind, amount_micros, created_at) SELECT org_id, $1, 'charge', -charged, $3 FROM c WHERE charged > 0)
      SELECT charged FROM c`, [requestId, cost, this.now()]);
    return row?.charged ?? 0;
  }

  /*
   * Locks the stale rows in request-id order, so two instances releasing at start-up
   * queue behind each other instead of deadlocking on rows taken in different orders.
   */
  async releaseStaleReservations(olderThan: number): Promise<number> {
    if (this.ledger) return this.ledger.reap();
    const [row] = await this.query<{ n: number }>(`WITH r AS (DELETE FROM reservations WHERE request_id IN (
          SELECT request_id FROM reservations WHERE created_at < $1 ORDER BY request_id FOR UPDATE)
        RETURNING org_id, amount_micros),
      per_org AS (SELECT org_id, SUM(amount_micros)::bigint AS amount FROM r GROUP BY org_id),
      refund AS (UPDATE orgs SET balance_micros = orgs.balance_micros + per_org.amount FROM per_org WHERE orgs.id = per_org.org_id)
      SELECT COUNT(*) AS n FROM r`, [olderThan]);
    return row?.n ?? 0;
  }

  settlementsFor(requestIds: Iterable<string>): Settlement[] {
    return this.ledger?.settlementsFor(requestIds) ?? [];
  }

  adoptSettlements(settlements: readonly Settlement[]): void {
    if (!this.ledger) throw new Error('only a gateway server adopts spilled settlements');
    this.ledger.adopt(settlements);
  }

  /** With the server's ledger: the rows and their settlements in one transaction (both or neither). */
  async insertLogs(rows: readonly LogRow[]): Promise<void> {
    // ON CONFLICT cannot touch one row twice in a statement; SQLite's INSERT OR REPLACE keeps the last, so do we.
    const unique = [...new Map(rows.map((r) => [r.requestId, r])).values()];
    if (unique.length === 0) return;
    const ledger = this.ledger;
    const params = (list: readonly LogRow[]): Param[] => {
      const db = list.map(toLogDb);
      return LOG_COLUMNS.map(([column]) => db.map((r) => r[column]) as Scalar[]);
    };
    if (!ledger || ledger.settlementsFor(unique.map((r) => r.requestId)).length === 0) {
      await this.query(INSERT_LOGS, params(unique));
      return;
    }
    await this.conn.ensureSchema();
    let taken: Settlement[] = [];
    await this.conn.transaction(async (client) => {
      taken = await ledger.apply(client, unique, async (patched) => void (await client.query(INSERT_LOGS, params(patched).map(storable))));
    });
    ledger.written(taken);
  }

  /** Slices count in the balance; what this process holds from them in memory counts as held (as on SQLite). */
  async audit(orgId: string): Promise<LedgerAudit> {
    const local = this.ledger?.heldFor(orgId) ?? 0;
    const [row] = await this.query<LedgerAudit>(`SELECT (COALESCE((SELECT balance_micros FROM orgs WHERE id = $1), 0)
          + COALESCE((SELECT SUM(amount_micros) FROM balance_slices WHERE org_id = $1), 0) - $2::bigint)::bigint AS balance,
        (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE org_id = $1 AND kind = 'credit')::bigint AS credited,
        (SELECT COALESCE(SUM(-amount_micros), 0) FROM ledger WHERE org_id = $1 AND kind = 'charge')::bigint AS charged,
        (SELECT COALESCE(SUM(cost_micros), 0) FROM request_logs WHERE org_id = $1 AND NOT byok)::bigint AS logged,
        ((SELECT COALESCE(SUM(amount_micros), 0) FROM reservations WHERE org_id = $1) + $2::bigint)::bigint AS held`, [orgId, local]);
    return row!;
  }

  private query<R extends object = Record<string, unknown>>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    return this.conn.query<R>(sql, params);
  }
}
