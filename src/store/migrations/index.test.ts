import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drivers, PG_URL, type DriverEnv } from '../drivers.testkit.js';
import { openStore } from '../index.js';
import { MIGRATIONS, migratePostgres, migrateSqlite, pending, type Migration } from './index.js';
import { ROUND1_POSTGRES, ROUND1_SQLITE } from './round-1.testkit.js';

/** Direct access to a test database, beside the store: what an operator (or round 1) would do. */
interface Raw {
  exec(sql: string): Promise<void>;
  rows<T>(sql: string): Promise<T[]>;
  migrate(list: readonly Migration[]): Promise<number[]>;
  /** The tables, columns, indexes and constraints, normalised, without schema_migrations. */
  schema(): Promise<string[]>;
  close(): Promise<void>;
}

const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();

function sqliteRaw(url: string): Raw {
  const db = new Database(url.slice('sqlite:'.length));
  return {
    exec: async (sql) => void db.exec(sql),
    rows: async <T>(sql: string) => db.prepare(sql).all() as T[],
    migrate: async (list) => migrateSqlite(db, list),
    schema: async () => (db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name")
      .all() as Array<{ type: string; name: string; sql: string | null }>).map((r) => `${r.type} ${r.name}: ${squash(r.sql ?? '')}`),
    close: async () => void db.close(),
  };
}

async function postgresRaw(url: string): Promise<Raw> {
  const schema = new URL(url).searchParams.get('schema') ?? '';
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await client.connect();
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(schema)}`);
  const rows = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => (await client.query(sql, params)).rows as T[];
  return {
    exec: async (sql) => void (await client.query(sql)),
    rows: (sql) => rows(sql),
    async migrate(list) {
      await client.query('BEGIN');
      try {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('tollgate.schema'))");
        const applied = await migratePostgres(client, list);
        await client.query('COMMIT');
        return applied;
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    },
    async schema() {
      const columns = await rows<{ d: string }>(`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || is_identity
        || ' ' || COALESCE(column_default, '') AS d FROM information_schema.columns WHERE table_schema = $1 AND table_name <> 'schema_migrations'`, [schema]);
      const indexes = await rows<{ d: string }>("SELECT regexp_replace(indexdef, ' ON \\S+\\.', ' ON ') AS d FROM pg_indexes WHERE schemaname = $1 AND tablename <> 'schema_migrations'", [schema]);
      const constraints = await rows<{ d: string }>(`SELECT c.conname || ': ' || pg_get_constraintdef(c.oid) AS d FROM pg_constraint c
        JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 AND c.conrelid::regclass::text <> 'schema_migrations'`, [schema]);
      return [...columns, ...indexes, ...constraints].map((r) => squash(r.d)).sort();
    },
    close: () => client.end(),
  };
}

const ALL = MIGRATIONS.map((m) => m.version);
/** A migration a later issue might append: applied once, after the others. */
const LATER: Migration = { version: MIGRATIONS.length + 1, name: 'test: widgets', sql: 'CREATE TABLE widgets (id TEXT PRIMARY KEY, n INTEGER NOT NULL)' };

describe('the migrations list', () => {
  it('numbers its migrations 1, 2, 3, … and each has a name', () => {
    expect(ALL).toEqual(MIGRATIONS.map((_, i) => i + 1));
    for (const m of MIGRATIONS) expect(m.name.length).toBeGreaterThan(0);
  });

  it('refuses a list with a gap, and a database newer than the list', () => {
    expect(() => pending([{ ...LATER, version: 2 }], new Set())).toThrow(/version 2 where 1 was expected/);
    expect(() => pending(MIGRATIONS, new Set([MIGRATIONS.length + 1]))).toThrow(/newer than this gateway/);
    expect(pending(MIGRATIONS, new Set(ALL))).toEqual([]);
  });
});

describe.each(drivers)('$name migrations', ({ name, setup }) => {
  let env: DriverEnv | undefined;
  const raws: Raw[] = [];
  const raw = async (db: string): Promise<Raw> => {
    const url = env!.url(db);
    const r = name === 'sqlite' ? sqliteRaw(url) : await postgresRaw(url);
    raws.push(r);
    return r;
  };
  /** Opens the store the way the gateway does (PostgreSQL migrates at its first query) and closes it. */
  const openAndClose = async (db: string): Promise<void> => {
    const store = openStore(env!.url(db));
    await store.ping();
    await store.close();
  };
  const versions = async (r: Raw): Promise<Array<{ version: number; applied_at: number }>> =>
    (await r.rows<{ version: number; applied_at: string | number }>('SELECT version, applied_at FROM schema_migrations ORDER BY version'))
      .map((v) => ({ version: v.version, applied_at: Number(v.applied_at) }));

  beforeAll(() => {
    env = setup();
  });
  afterAll(async () => {
    for (const r of raws) await r.close();
    await env?.teardown();
  });

  it('a round-1 database (tables, rows, no schema_migrations) is carried forward: rows kept, versions recorded', async () => {
    const r = await raw('round1');
    await r.exec(name === 'sqlite' ? ROUND1_SQLITE : ROUND1_POSTGRES);
    await r.exec(`INSERT INTO orgs (id, name, balance_micros, retention, created_at) VALUES ('org_r1', 'round one', 1234567, 'none', 1700000000000);
      INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES ('key_r1', 'org_r1', 'tg_AAAAAAAA', '${'ab'.repeat(32)}', 1700000000001);
      INSERT INTO ledger (org_id, request_id, kind, amount_micros, note, created_at) VALUES ('org_r1', 'req_r1', 'charge', -765, NULL, 1700000000002);
      INSERT INTO request_logs (id, request_id, org_id, modality, status, cost_micros, cost_estimated, byok, duration_ms, attempts, created_at)
        VALUES ('log_r1', 'req_r1', 'org_r1', 'chat', 200, 765, FALSE, FALSE, 12, '[]', 1700000000003);`);
    const before = await r.schema();
    await expect(r.rows('SELECT version FROM schema_migrations')).rejects.toThrow();

    // Migration 1 recognises the tables: nothing recreated or altered, only recorded.
    expect(await r.migrate(MIGRATIONS.slice(0, 1))).toEqual([1]);
    expect(await r.schema()).toEqual(before);
    await openAndClose('round1');
    expect((await versions(r)).map((v) => v.version)).toEqual(ALL);

    const store = openStore(env!.url('round1'));
    try {
      expect(await store.getOrg('org_r1')).toEqual({ id: 'org_r1', name: 'round one', balanceMicros: 1234567, retention: 'none', createdAt: 1700000000000 });
      expect(await store.findApiKey('tg_AAAAAAAA')).toMatchObject({ id: 'key_r1', orgId: 'org_r1', revokedAt: null });
      expect(await store.getLog('req_r1')).toMatchObject({ requestId: 'req_r1', costMicros: 765, costEstimated: false, byok: false, attempts: [], extra: null });
      expect(await store.sumCharges('org_r1')).toBe(await store.sumLoggedCosts('org_r1'));
    } finally {
      await store.close();
    }
  });

  it('a fresh database gets every migration, and the same schema as a carried-forward round-1 one', async () => {
    await openAndClose('fresh');
    const fresh = await raw('fresh');
    expect((await versions(fresh)).map((v) => v.version)).toEqual(ALL);
    const r = await raw('round1_again');
    await r.exec(name === 'sqlite' ? ROUND1_SQLITE : ROUND1_POSTGRES);
    await openAndClose('round1_again');
    expect(await fresh.schema()).toEqual(await r.schema());
  });

  it('applying the migrations twice is a no-op', async () => {
    await openAndClose('twice');
    const r = await raw('twice');
    const first = await versions(r);
    const schema = await r.schema();
    expect(await r.migrate(MIGRATIONS)).toEqual([]);
    await openAndClose('twice');
    expect(await versions(r)).toEqual(first);
    expect(await r.schema()).toEqual(schema);
  });

  it('a migration appended to the list is applied once, after the others', async () => {
    await openAndClose('later');
    const r = await raw('later');
    expect(await r.migrate([...MIGRATIONS, LATER])).toEqual([LATER.version]);
    expect(await r.migrate([...MIGRATIONS, LATER])).toEqual([]);
    expect((await versions(r)).map((v) => v.version)).toEqual([...ALL, LATER.version]);
    await r.exec("INSERT INTO widgets (id, n) VALUES ('w', 1)");
    expect(await r.rows('SELECT id, n FROM widgets')).toEqual([{ id: 'w', n: 1 }]);
  });
});
