import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { openStore } from './index.js';
import type { Store } from './types.js';

/*
 * One contract, two drivers: every test below runs against SQLite and PostgreSQL.
 * PostgreSQL is a required part of the test environment (dev machines and CI), so a
 * missing server fails the suite rather than skipping it.
 */
export const PG_URL = process.env.TOLLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface DriverEnv {
  /** A database url; the same name gives the same database, a new name an empty one. */
  url(name: string): string;
  teardown(): Promise<void>;
}

export const drivers: Array<{ name: string; setup: () => DriverEnv }> = [
  {
    name: 'sqlite',
    setup() {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-store-'));
      return { url: (name) => `sqlite:${join(dir, `${name}.db`)}`, teardown: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'postgres',
    setup() {
      // A schema per run and per database name, so parallel runs never see each other's rows.
      const run = `tollgate_test_${process.pid}_${randomBytes(4).toString('hex')}`;
      const schemas = new Set<string>();
      return {
        url(name) {
          const u = new URL(PG_URL);
          u.searchParams.set('schema', `${run}_${name}`);
          schemas.add(`${run}_${name}`);
          return u.toString();
        },
        async teardown() {
          const client = new pg.Client({ connectionString: PG_URL });
          await client.connect();
          try {
            for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(s)} CASCADE`);
          } finally {
            await client.end();
          }
        },
      };
    },
  },
];


/**
 * Two stores on one fresh database of a driver, as two gateway processes (or a gateway
 * and the CLI) open it, on a test clock if given; opened and closed by vitest's hooks. Read the
 * handle's fields inside tests and hooks, not at the top level.
 */
export function useStorePair(setup: () => DriverEnv, database: string, now?: () => number): { store: Store; other: Store } {
  const handle = {} as { store: Store; other: Store };
  let env: DriverEnv | undefined;
  beforeAll(async () => {
    env = setup();
    handle.store = openStore(env.url(database), now);
    handle.other = openStore(env.url(database), now);
    await handle.store.ping();
    await handle.other.ping();
  });
  afterAll(async () => {
    await handle.store?.close();
    await handle.other?.close();
    await env?.teardown();
  });
  return handle;
}

/** One query on a PostgreSQL url (a `?schema=` parameter sets the search path, as the store does). */
export async function pgQuery<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const u = new URL(url);
  const schema = u.searchParams.get('schema');
  u.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: u.toString() });
  await client.connect();
  try {
    if (schema) await client.query(`SET search_path TO ${pg.escapeIdentifier(schema)}`);
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** A fresh schema on the machine's shared PostgreSQL; `drop()` removes it. */
export function sharedPostgresSchema(name: string): { url: string; drop(): Promise<void> } {
  const schema = `tollgate_fleet_${name}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const u = new URL(PG_URL);
  u.searchParams.set('schema', schema);
  return {
    url: u.toString(),
    drop: async () => void (await pgQuery(PG_URL, `DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)),
  };
}
