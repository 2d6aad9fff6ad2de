import Database from 'better-sqlite3';
import pg from 'pg';
import { PG_URL } from './drivers.testkit.js';
import { numberPlaceholders } from './sql.js';

/**
 * Reads or writes a test database directly, beside the store, as someone holding only
 * a dump (or an old version of the gateway) would.
 */
export async function rawQuery<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length));
    try {
      const stmt = db.prepare(sql);
      if (stmt.reader) return stmt.all(...params) as T[];
      stmt.run(...params);
      return [];
    } finally {
      db.close();
    }
  }
  const schema = new URL(url).searchParams.get('schema') ?? 'public';
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(schema)}`);
    return (await client.query(numberPlaceholders(sql), params)).rows as T[];
  } finally {
    await client.end();
  }
}
