import { createRequire } from 'node:module';
import type { Pool, PoolClient } from 'pg';
import { formatUsd, MAX_BALANCE_MICROS, type Micros } from '../money.js';
import type { LeaseStore, MediaStore } from './media.js';
import { PostgresRecordStore, type RecordStore } from './records.js';
import { PostgresLeaseStore, PostgresMediaStore, type Query } from './media-postgres.js';
import { migratePostgres } from './migrations/index.js';
import { newId } from '../ids.js';
import type { SecretBox } from '../secrets.js';
import { SqlAccountStore } from './accounts.js';
import { SqlLifecycleStore } from './lifecycle.js';
import { SqlLimitsStore } from './limits-store.js';
import { SqlAuditStore } from '../audit/store.js';
import { SqlLogQueryStore } from './log-query.js';
import { SqlProviderKeyStore } from './provider-key-store.js';
import { SqlWebhookStore } from './webhook-store.js';
import { fromLogDb, LOG_COLUMNS, ORG_COLUMNS, toKey, toLogDb, toOrg, type KeyRow, type OrgRow, type StoredLogRow } from './rows.js';
import { postgresDb, type PgQuery } from './sql.js';
import { PostgresLedger, type PostgresLedgerOptions } from './postgres-ledger.js';
import { DEFAULT_PROJECT, SqlTenancyStore } from './tenancy.js';
import { creditRefused, debitRefused, DuplicateError, INITIAL_CREDITS_NOTE, type ApiKeyRecord, type LedgerAudit, type LogRow, type Org, type Retention, type Settlement, type Store } from './types.js';

/*
 * One statement whatever the batch size: each column travels as one array parameter,
 * so a large batch never meets the 65535-parameter limit of a multi-row VALUES list.
 */
const INSERT_LOGS = `INSERT INTO request_logs (${LOG_COLUMNS.map(([c]) => c).join(', ')})
  SELECT * FROM unnest(${LOG_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')})
  ON CONFLICT (request_id) DO UPDATE SET ${LOG_COLUMNS.filter(([c]) => c !== 'request_id').map(([c]) => `${c} = EXCLUDED.${c}`).join(', ')}`;

type Scalar = string | number | boolean | null;
type Param = Scalar | readonly Scalar[];

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
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly media: MediaStore;
  readonly leases: LeaseStore;
  readonly records: RecordStore;
  readonly tenancy: SqlTenancyStore;
  readonly accounts: SqlAccountStore;
  readonly lifecycle: SqlLifecycleStore;
  readonly logQuery: SqlLogQueryStore;
  readonly providerKeys: SqlProviderKeyStore;
  readonly limits: SqlLimitsStore;
  readonly webhooks: SqlWebhookStore;
  readonly auditLog: SqlAuditStore;
  private readonly pool: Pool;
  /** The server's reservations only: commits without waiting for the WAL flush (see reserveFast). */
  private readonly reservePool: Pool | undefined;
  private readonly pg: typeof import('pg');
  private readonly schema: string | undefined;
  private schemaReady: Promise<void> | undefined;
  private closed: Promise<void> | undefined;
  /** The server's ledger (see PostgresStoreOptions.ledger); undefined for admin commands. */
  readonly ledger: PostgresLedger | undefined;

  constructor(url: string, private readonly now: () => number = Date.now, opts: PostgresStoreOptions = {}) {
    const parsed = new URL(url);
    const schema = opts.schema ?? (parsed.searchParams.get('schema') || undefined);
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new RangeError(`database schema must be a lower-case SQL identifier, got ${JSON.stringify(schema)}`);
    }
    this.schema = schema;
    // pg lets URL parameters override the config object, so `options` is merged here and removed from the URL.
    const options = [parsed.searchParams.get('options'), schema && `-c search_path=${schema}`].filter(Boolean).join(' ');
    parsed.searchParams.delete('schema');
    parsed.searchParams.delete('options');
    // pg is loaded only when a PostgreSQL database is configured: the embedded default never pays for it.
    const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
    this.pg = pg;
    const typeParsers = new pg.TypeOverrides();
    typeParsers.setTypeParser(pg.types.builtins.INT8, parseInt8);
    this.pool = new pg.Pool({ connectionString: parsed.toString(), options: options || undefined, types: typeParsers, max: opts.poolSize ?? 10 });
    // An idle pooled connection that drops emits here; unheard, Node would exit. The next query reports the fault.
    this.pool.on('error', () => undefined);
    /*
     * A busy org's reservations queue on its balance row, each holding the row lock until
     * its commit; waiting for the WAL flush there serialises them at the disk's pace. A
     * reservation may skip that wait: a commit lost in a crash of PostgreSQL takes its debit
     * with it (one statement), and the settlement that finds no reservation charges the
     * balance directly (the late path of postgres-ledger.ts). Charges and log rows, which
     * are what was sold, keep synchronous commits.
     */
    this.reservePool = opts.ledger && new pg.Pool({
      connectionString: parsed.toString(), options: [options, '-c synchronous_commit=off'].filter(Boolean).join(' '),
      types: typeParsers, max: opts.poolSize ?? 10,
    });
    this.reservePool?.on('error', () => undefined);
    const query: Query = (sql, params) => this.query(sql, params);
    this.media = new PostgresMediaStore(query);
    this.leases = new PostgresLeaseStore(query);
    this.records = new PostgresRecordStore(query);
    const sql = postgresDb(async (text, params) => {
      await this.ensureSchema();
      const r = await this.pool.query(text, params.map(storable));
      return { rows: r.rows as object[], rowCount: r.rowCount };
    }, async <T>(work: (q: PgQuery) => Promise<T>): Promise<T> => {
      await this.ensureSchema();
      let out: { value: T } | undefined;
      await this.transaction(async (client) => {
        out = { value: await work(async (text, params) => {
          const r = await client.query(text, params.map(storable));
          return { rows: r.rows as object[], rowCount: r.rowCount };
        }) };
      });
      return (out as { value: T }).value;
    });
    this.tenancy = new SqlTenancyStore(sql, now, { heldFor: (orgId) => this.ledger?.heldFor(orgId) ?? 0, steady: async () => undefined });
    this.accounts = new SqlAccountStore(sql, now);
    this.lifecycle = new SqlLifecycleStore(sql, now);
    this.logQuery = new SqlLogQueryStore(sql);
    this.providerKeys = new SqlProviderKeyStore(sql, opts.secrets, now);
    this.limits = new SqlLimitsStore(sql);
    this.webhooks = new SqlWebhookStore(sql, opts.secrets, now);
    this.auditLog = new SqlAuditStore(sql, now);
    this.ledger = opts.ledger && new PostgresLedger((text, params) => this.query(text, params as Param[]), (work) => this.transaction(work), now, opts.ledger,
      async (text, params) => {
        await this.ensureSchema();
        return (await (this.reservePool ?? this.pool).query(text, params.map(storable))).rows;
      });
    this.ledger?.start();
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    this.closed ??= (async () => {
      try {
        await this.ledger?.close();
      } finally {
        await Promise.all([this.pool.end(), this.reservePool?.end()]);
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
      if (err instanceof this.pg.DatabaseError && err.code === '23505' && err.constraint === 'orgs_name_key') {
        throw new DuplicateError(`an organization named "${name}" already exists`);
      }
      throw err;
    }
    return org;
  }

  async getOrg(id: string): Promise<Org | undefined> {
    const [row] = await this.query<OrgRow>(`SELECT ${ORG_COLUMNS} FROM orgs o WHERE o.id = $1`, [id]);
    return row && this.withHeld(toOrg(row));
  }

  async findOrgByName(name: string): Promise<Org | undefined> {
    const [row] = await this.query<OrgRow>(`SELECT ${ORG_COLUMNS} FROM orgs o WHERE o.name = $1`, [name]);
    return row && this.withHeld(toOrg(row));
  }

  async countOrgs(): Promise<number> {
    const [row] = await this.query<{ n: number }>('SELECT COUNT(*) AS n FROM orgs');
    return row?.n ?? 0;
  }

  async setRetention(orgId: string, retention: Retention): Promise<void> {
    await this.query('UPDATE orgs SET retention = $2 WHERE id = $1', [orgId, retention]);
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

  async findApiKey(prefix: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.query<KeyRow>('SELECT * FROM api_keys WHERE prefix = $1', [prefix]);
    return row && toKey(row);
  }

  async revokeApiKey(prefix: string): Promise<boolean> {
    const rows = await this.query('UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND revoked_at IS NULL RETURNING id', [this.now(), prefix]);
    return rows.length > 0;
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
    await this.ensureSchema();
    let taken: Settlement[] = [];
    await this.transaction(async (client) => {
      taken = await ledger.apply(client, unique, async (patched) => void (await client.query(INSERT_LOGS, params(patched).map(storable))));
    });
    ledger.written(taken);
  }

  async getLog(requestId: string): Promise<LogRow | undefined> {
    const [row] = await this.query<StoredLogRow>('SELECT * FROM request_logs WHERE request_id = $1 OR id = $1 LIMIT 1', [requestId]);
    return row && fromLogDb(row);
  }

  async sumCharges(orgId: string): Promise<Micros> {
    const [row] = await this.query<{ s: number }>("SELECT COALESCE(SUM(-amount_micros), 0)::bigint AS s FROM ledger WHERE org_id = $1 AND kind = 'charge'", [orgId]);
    return row?.s ?? 0;
  }

  async sumLoggedCosts(orgId: string): Promise<Micros> {
    const [row] = await this.query<{ s: number }>('SELECT COALESCE(SUM(cost_micros), 0)::bigint AS s FROM request_logs WHERE org_id = $1 AND NOT byok', [orgId]);
    return row?.s ?? 0;
  }

  /** The balance less what this process holds of it in memory (reservations from its slices, charges not written). */
  private withHeld(org: Org): Org {
    org.balanceMicros -= this.ledger?.heldFor(org.id) ?? 0;
    return org;
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

  private async query<R extends object = Record<string, unknown>>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    await this.ensureSchema();
    return (await this.pool.query<R>(sql, params.map(storable))).rows;
  }

  /** Migrates the schema once per instance; a failure (database down) is retried by the next call. */
  private ensureSchema(): Promise<void> {
    this.schemaReady ??= this.createSchema().catch((err: unknown) => {
      this.schemaReady = undefined;
      throw err;
    });
    return this.schemaReady;
  }

  private async createSchema(): Promise<void> {
    await this.transaction(async (client) => {
      // Instances starting together take turns: each migration is applied once, and concurrent DDL never collides in the catalogue.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('tollgate.schema'))");
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.pg.escapeIdentifier(this.schema)}`);
      await migratePostgres(client);
    });
  }

  private async transaction(work: (client: PoolClient) => Promise<void>): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    /*
     * A connection cut while checked out (a PostgreSQL restart, a terminated backend) makes pg
     * emit 'error' on the client. The pool listens only while a client is idle; unheard, Node
     * would exit the process, and the log rows and settlements it holds in memory would die
     * with it (served, neither charged nor logged). Heard here: the pending query, or the next
     * one, fails, the transaction throws like any failed batch (kept and retried), and the
     * connection is discarded.
     */
    const onLost = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onLost);
    try {
      await client.query('BEGIN');
      await work(client);
      await client.query('COMMIT');
    } catch (err) {
      // A connection that cannot even roll back is discarded rather than returned to the pool.
      await client.query('ROLLBACK').catch((e: Error) => { broken ??= e; });
      throw err;
    } finally {
      // release() puts the pool's own listener back before this one goes: no moment without one.
      client.release(broken);
      client.removeListener('error', onLost);
    }
  }
}

/** BIGINT arrives as text; money and times stay below 2^53, and anything else is corruption worth an error. */
function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new RangeError(`BIGINT ${text} is beyond the safe integer range`);
  return n;
}

/** PostgreSQL text cannot hold NUL; client-supplied text (prompts, model names) must not fail a write over it. */
function storable(value: Param): Param {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\uFFFD');
  if (Array.isArray(value)) return value.map((v: Scalar) => (typeof v === 'string' ? v.replaceAll('\u0000', '\uFFFD') : v));
  return value;
}
