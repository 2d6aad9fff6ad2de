import { createRequire } from 'node:module';
import type { Pool, PoolClient } from 'pg';
import { migratePostgres } from './migrations/index.js';
import { postgresDb, type PgQuery, type SqlDb } from './sql.js';

export type Scalar = string | number | boolean | null;
export type Param = Scalar | readonly Scalar[];

/**
 * The PostgreSQL store's connections: the pool (and the server's reservation pool), the
 * schema migrated once per instance, transactions that survive a connection lost in them,
 * and the shared SQL adapter (sql.ts) over them.
 */
export class PgConnection {
  readonly pg: typeof import('pg');
  readonly pool: Pool;
  /** The server's reservations only: commits without waiting for the WAL flush (see PostgresStore). */
  readonly reservePool: Pool | undefined;
  private readonly schema: string | undefined;
  private schemaReady: Promise<void> | undefined;

  constructor(url: string, opts: { schema?: string; poolSize?: number; reservePool: boolean }) {
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
    this.reservePool = opts.reservePool ? new pg.Pool({
      connectionString: parsed.toString(), options: [options, '-c synchronous_commit=off'].filter(Boolean).join(' '),
      types: typeParsers, max: opts.poolSize ?? 10,
    }) : undefined;
    this.reservePool?.on('error', () => undefined);
  }

  /** The shared SQL adapter over the pool, with transactions on a connection of their own. */
  sqlDb(): SqlDb {
    return postgresDb(async (text, params) => {
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
  }

  /** The reservation pool where there is one (the server), else the pool. */
  async reserveQuery(text: string, params: readonly Param[]): Promise<object[]> {
    await this.ensureSchema();
    return (await (this.reservePool ?? this.pool).query(text, params.map(storable))).rows as object[];
  }

  async end(): Promise<void> {
    await Promise.all([this.pool.end(), this.reservePool?.end()]);
  }

  async query<R extends object = Record<string, unknown>>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    await this.ensureSchema();
    return (await this.pool.query<R>(sql, params.map(storable))).rows;
  }

  /** Migrates the schema once per instance; a failure (database down) is retried by the next call. */
  ensureSchema(): Promise<void> {
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

  async transaction(work: (client: PoolClient) => Promise<void>): Promise<void> {
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
export function storable(value: Param): Param {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\uFFFD');
  if (Array.isArray(value)) return value.map((v: Scalar) => (typeof v === 'string' ? v.replaceAll('\u0000', '\uFFFD') : v));
  return value;
}
