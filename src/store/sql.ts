import type Database from 'better-sqlite3';
import { DuplicateError } from '../model/records.js';

/** A value bound to a statement; booleans become 0/1 on SQLite. */
export type SqlValue = string | number | boolean | null;
/** A parameter: a value, or (PostgreSQL `unnest`) an array of values. */
export type SqlParam = SqlValue | readonly SqlValue[];

/**
 * The small surface the management sub-stores (tenancy, accounts, log queries,
 * provider keys) need from a database, so each is written once for both drivers.
 * SQL is written with `?` placeholders (rewritten to `$1…` for PostgreSQL) and in the
 * subset both databases share; where they differ, `dialect` picks the text. Every
 * write is one statement (no transaction spans an `await`: on SQLite another request's
 * statement could land inside it).
 */
export interface SqlDb {
  readonly dialect: 'sqlite' | 'postgres';
  /** Rows of a query (or of a write with RETURNING). */
  all<R extends object>(sql: string, params?: readonly SqlParam[]): Promise<R[]>;
  /** A write; returns the number of rows it changed. */
  run(sql: string, params?: readonly SqlParam[]): Promise<number>;
  /** The same write for each parameter list, all or none (one transaction). */
  runMany(sql: string, rows: ReadonlyArray<readonly SqlParam[]>): Promise<void>;
  /**
   * PostgreSQL only: runs `work` in one transaction on a connection of its own (its
   * statements go through `tx`), for a check that one statement cannot make safely under
   * READ COMMITTED (a row lock taken first, then the guarded write). SQLite has none: its
   * one connection serialises statements, and a transaction there must not span an await.
   */
  transaction?: <T>(work: (tx: SqlDb) => Promise<T>) => Promise<T>;
}

/** What a unique-constraint violation looks like in either driver. */
function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** Runs `write`, turning a unique-constraint violation into a DuplicateError with `message`. */
export async function unique<T>(write: () => Promise<T>, message: string): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw new DuplicateError(message);
    throw err;
  }
}

const bindable = (v: SqlParam): SqlValue => {
  if (Array.isArray(v)) throw new TypeError('array parameters are PostgreSQL-only');
  return typeof v === 'boolean' ? (v ? 1 : 0) : (v as SqlValue);
};

/** SQLite: statements prepared once and kept; better-sqlite3 is synchronous, the promises resolve at once. */
export function sqliteDb(db: Database.Database): SqlDb {
  const prepared = new Map<string, Database.Statement>();
  const stmt = (sql: string): Database.Statement => {
    let s = prepared.get(sql);
    if (!s) prepared.set(sql, (s = db.prepare(sql)));
    return s;
  };
  return {
    dialect: 'sqlite',
    async all<R extends object>(sql: string, params: readonly SqlParam[] = []) {
      const s = stmt(sql);
      const bound = params.map(bindable);
      if (s.reader) return s.all(...bound) as R[];
      s.run(...bound);
      return [];
    },
    async run(sql, params = []) {
      return stmt(sql).run(...params.map(bindable)).changes;
    },
    async runMany(sql, rows) {
      const s = stmt(sql);
      db.transaction(() => {
        for (const r of rows) s.run(...r.map(bindable));
      })();
    },
  };
}

/** The PostgreSQL driver's query function: schema ensured, NUL made storable. */
export type PgQuery = (sql: string, params: readonly SqlParam[]) => Promise<{ rows: object[]; rowCount: number | null }>;

/** `?` → `$1, $2, …` (the management SQL never has a `?` inside a literal). */
export function numberPlaceholders(sql: string): string {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
}

/** Runs `work` in one transaction, its statements through the query function it is given. */
export type PgTransaction = <T>(work: (query: PgQuery) => Promise<T>) => Promise<T>;

export function postgresDb(query: PgQuery, transaction?: PgTransaction): SqlDb {
  const text = new Map<string, string>();
  const pg = (sql: string): string => {
    let t = text.get(sql);
    if (t === undefined) text.set(sql, (t = numberPlaceholders(sql)));
    return t;
  };
  const on = (q: PgQuery): SqlDb => ({
    dialect: 'postgres',
    async all<R extends object>(sql: string, params: readonly SqlParam[] = []) {
      return (await q(pg(sql), params)).rows as R[];
    },
    async run(sql, params = []) {
      return (await q(pg(sql), params)).rowCount ?? 0;
    },
    async runMany(sql, rows) {
      if (rows.length === 0) return;
      // One statement per row inside one transaction would need a dedicated client; the
      // callers' writes are idempotent (last-used times), so they go one by one.
      for (const r of rows) await q(pg(sql), r);
    },
    ...(transaction ? { transaction: <T>(work: (tx: SqlDb) => Promise<T>): Promise<T> => transaction((tq) => work(on(tq))) } : {}),
  });
  return on(query);
}
