// Reading a bench run's database back, whichever driver it ran on.
import Database from 'better-sqlite3';
import pg from 'pg';

/** The rows of one read-only query on `dbUrl`: a `sqlite:` file, or a `?schema=` of the PostgreSQL at `pgUrl`. */
export async function readRows(dbUrl, sql, pgUrl) {
  if (dbUrl.startsWith('sqlite:')) {
    const db = new Database(dbUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return db.prepare(sql).all();
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: pgUrl, options: `-c search_path=${new URL(dbUrl).searchParams.get('schema')}` });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}
