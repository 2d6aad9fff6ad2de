import type Database from 'better-sqlite3';
import { round1Schema } from './001-round-1.js';
import { orgRecords } from './002-org-records.js';
import { tenancySchema } from './003-tenancy.js';
import { mediaClaims } from './004-media-claims.js';
import { limitsSchema } from './005-limits.js';
import { ledgerSchema } from './006-ledger.js';
import { balanceSlices } from './007-balance-slices.js';
import { usageIndexes } from './008-usage-indexes.js';
import { invitations } from './009-invitations.js';
import { projectMaxTokens } from './010-project-max-tokens.js';
import { projectUnsupportedParams } from './011-project-unsupported-params.js';
import { oidcFlows } from './012-oidc-flows.js';
import { auditLog } from './013-audit-log.js';
import { webhooks } from './014-webhooks.js';
import { accountLifecycle } from './015-account-lifecycle.js';
import { balanceAlert } from './016-balance-alert.js';
import { logDeployment } from './017-log-deployment.js';
import { responseCache } from './018-response-cache.js';
import { guardrails } from './019-guardrails.js';
import { limitMode } from './020-limit-mode.js';
import { errorCodesIndex } from './021-error-codes-index.js';
import type { Migration } from './migration.js';

export type { Migration } from './migration.js';

export type Dialect = 'sqlite' | 'postgres';

/** Every migration, in version order. */
export const MIGRATIONS: readonly Migration[] = [round1Schema, orgRecords, tenancySchema, mediaClaims, limitsSchema, ledgerSchema, balanceSlices, usageIndexes, invitations, projectMaxTokens,
  projectUnsupportedParams, oidcFlows, auditLog, webhooks, accountLifecycle, balanceAlert,
  logDeployment, responseCache, guardrails, limitMode, errorCodesIndex];

const LEDGER_TABLE = (bigint: string): string =>
  `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ${bigint} NOT NULL)`;

function migrationSql(m: Migration, dialect: Dialect): string {
  return typeof m.sql === 'string' ? m.sql : m.sql[dialect];
}

/** The migrations a database at these versions still needs; refuses a list that is not 1, 2, 3, … */
export function pending(list: readonly Migration[], applied: ReadonlySet<number>): Migration[] {
  list.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration ${m.name}: version ${m.version} where ${i + 1} was expected`);
  });
  const newest = Math.max(0, ...applied);
  if (newest > list.length) throw new Error(`the database is at schema version ${newest}, newer than this gateway (${list.length}): upgrade the gateway`);
  return list.filter((m) => !applied.has(m.version));
}

/**
 * Brings a SQLite database up to date. One IMMEDIATE transaction takes the write lock
 * first, so a CLI command and the server opening the same file at once apply each
 * migration once. Returns the versions applied now.
 */
export function migrateSqlite(db: Database.Database, list: readonly Migration[] = MIGRATIONS): number[] {
  return db.transaction(() => {
    db.exec(LEDGER_TABLE('INTEGER'));
    const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version));
    const todo = pending(list, applied);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of todo) {
      db.exec(migrationSql(m, 'sqlite'));
      record.run(m.version, m.name, Date.now());
    }
    return todo.map((m) => m.version);
  }).immediate();
}

/** The part of a PostgreSQL client the migrations use. */
export interface SqlClient {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * Brings a PostgreSQL schema up to date, inside the caller's transaction and under the
 * advisory lock it holds, so instances starting together apply each migration once.
 * Returns the versions applied now.
 */
export async function migratePostgres(client: SqlClient, list: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  await client.query(LEDGER_TABLE('BIGINT'));
  const rows = (await client.query('SELECT version FROM schema_migrations')).rows as Array<{ version: number }>;
  const todo = pending(list, new Set(rows.map((r) => r.version)));
  for (const m of todo) {
    await client.query(migrationSql(m, 'postgres'));
    await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
  }
  return todo.map((m) => m.version);
}
