import { createRequire } from 'node:module';
import type { Pool, PoolClient } from 'pg';
import type { Micros } from '../money.js';
import type { LeaseStore, MediaStore } from './media.js';
import { MEDIA_SCHEMA_POSTGRES, PostgresLeaseStore, PostgresMediaStore, type Query } from './media-postgres.js';
import { newId } from '../ids.js';
import { DuplicateError, type ApiKeyRecord, type LogRow, type Org, type Retention, type Store, type UpstreamAttempt } from './types.js';

/*
 * Same tables and meaning as the SQLite driver. Money and epoch-millisecond times are
 * BIGINT. `attempts` and `extra` are `json`, not `jsonb`: jsonb refuses the `\u0000`
 * escape, and one such string from a client would fail its log batch on every retry.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS orgs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, balance_micros BIGINT NOT NULL CHECK (balance_micros >= 0),
  retention TEXT NOT NULL CHECK (retention IN ('standard','none')), created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), prefix TEXT NOT NULL UNIQUE, hash TEXT NOT NULL,
  created_at BIGINT NOT NULL, revoked_at BIGINT);
CREATE TABLE IF NOT EXISTS provider_keys (
  org_id TEXT NOT NULL REFERENCES orgs(id), provider_id TEXT NOT NULL, key TEXT NOT NULL, updated_at BIGINT NOT NULL,
  PRIMARY KEY (org_id, provider_id));
CREATE TABLE IF NOT EXISTS reservations (
  request_id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), amount_micros BIGINT NOT NULL,
  created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS reservations_created ON reservations(created_at);
CREATE TABLE IF NOT EXISTS ledger (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), request_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('credit','charge')), amount_micros BIGINT NOT NULL, note TEXT,
  created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ledger_org ON ledger(org_id);
CREATE TABLE IF NOT EXISTS request_logs (
  id TEXT PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, org_id TEXT, api_key_id TEXT, modality TEXT NOT NULL,
  requested_model TEXT, used_model TEXT, used_provider TEXT, status INTEGER NOT NULL, error_code TEXT,
  cost_micros BIGINT NOT NULL, cost_estimated BOOLEAN NOT NULL, byok BOOLEAN NOT NULL, duration_ms INTEGER NOT NULL,
  ttfb_ms INTEGER, prompt TEXT, attempts JSON NOT NULL, extra JSON, created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS request_logs_org_time ON request_logs(org_id, modality, created_at);
`;

/** Log columns in insert order, with the array type `unnest` needs for each. */
const LOG_COLUMNS = [
  ['id', 'text'], ['request_id', 'text'], ['org_id', 'text'], ['api_key_id', 'text'], ['modality', 'text'],
  ['requested_model', 'text'], ['used_model', 'text'], ['used_provider', 'text'], ['status', 'int'], ['error_code', 'text'],
  ['cost_micros', 'bigint'], ['cost_estimated', 'boolean'], ['byok', 'boolean'], ['duration_ms', 'int'], ['ttfb_ms', 'int'],
  ['prompt', 'text'], ['attempts', 'json'], ['extra', 'json'], ['created_at', 'bigint'],
] as const;

/*
 * One statement whatever the batch size: each column travels as one array parameter,
 * so a large batch never meets the 65535-parameter limit of a multi-row VALUES list.
 */
const INSERT_LOGS = `INSERT INTO request_logs (${LOG_COLUMNS.map(([c]) => c).join(', ')})
  SELECT * FROM unnest(${LOG_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')})
  ON CONFLICT (request_id) DO UPDATE SET ${LOG_COLUMNS.filter(([c]) => c !== 'request_id').map(([c]) => `${c} = EXCLUDED.${c}`).join(', ')}`;

type Scalar = string | number | boolean | null;
type Param = Scalar | readonly Scalar[];
type LogColumn = (typeof LOG_COLUMNS)[number][0];

interface OrgRow { id: string; name: string; balance_micros: number; retention: Retention; created_at: number }
interface KeyRow { id: string; org_id: string; prefix: string; hash: string; created_at: number; revoked_at: number | null }
interface LogDbRow {
  request_id: string; org_id: string | null; api_key_id: string | null; modality: string; requested_model: string | null;
  used_model: string | null; used_provider: string | null; status: number; error_code: string | null; cost_micros: number;
  cost_estimated: boolean; byok: boolean; duration_ms: number; ttfb_ms: number | null; prompt: string | null;
  attempts: UpstreamAttempt[]; extra: Record<string, unknown> | null; created_at: number;
}

const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, balanceMicros: r.balance_micros, retention: r.retention, createdAt: r.created_at });
const toKey = (r: KeyRow): ApiKeyRecord => ({ id: r.id, orgId: r.org_id, prefix: r.prefix, hash: r.hash, createdAt: r.created_at, revokedAt: r.revoked_at });

export interface PostgresStoreOptions {
  /** Schema holding the tables, created if missing; overrides `?schema=` in the URL. Default: the server's search_path. */
  schema?: string;
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
  private readonly pool: Pool;
  private readonly pg: typeof import('pg');
  private readonly schema: string | undefined;
  private schemaReady: Promise<void> | undefined;
  private closed: Promise<void> | undefined;

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
    this.pool = new pg.Pool({ connectionString: parsed.toString(), options: options || undefined, types: typeParsers });
    // An idle pooled connection that drops emits here; unheard, Node would exit. The next query reports the fault.
    this.pool.on('error', () => undefined);
    const query: Query = (sql, params) => this.query(sql, params);
    this.media = new PostgresMediaStore(query);
    this.leases = new PostgresLeaseStore(query);
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    this.closed ??= this.pool.end();
    await this.closed;
  }

  async createOrg(name: string, credits: Micros, retention: Retention): Promise<Org> {
    const org: Org = { id: newId('org'), name, balanceMicros: credits, retention, createdAt: this.now() };
    try {
      await this.query(`WITH o AS (INSERT INTO orgs (id, name, balance_micros, retention, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id)
        INSERT INTO ledger (org_id, kind, amount_micros, note, created_at) SELECT id, 'credit', $3, 'initial credits', $5 FROM o WHERE $3::bigint > 0`,
      [org.id, name, credits, retention, org.createdAt]);
    } catch (err) {
      if (err instanceof this.pg.DatabaseError && err.code === '23505' && err.constraint === 'orgs_name_key') {
        throw new DuplicateError(`an organization named "${name}" already exists`);
      }
      throw err;
    }
    return org;
  }

  async getOrg(id: string): Promise<Org | undefined> {
    const [row] = await this.query<OrgRow>('SELECT * FROM orgs WHERE id = $1', [id]);
    return row && toOrg(row);
  }

  async findOrgByName(name: string): Promise<Org | undefined> {
    const [row] = await this.query<OrgRow>('SELECT * FROM orgs WHERE name = $1', [name]);
    return row && toOrg(row);
  }

  async countOrgs(): Promise<number> {
    const [row] = await this.query<{ n: number }>('SELECT COUNT(*) AS n FROM orgs');
    return row?.n ?? 0;
  }

  async setRetention(orgId: string, retention: Retention): Promise<void> {
    await this.query('UPDATE orgs SET retention = $2 WHERE id = $1', [orgId, retention]);
  }

  async addCredits(orgId: string, amount: Micros, note: string): Promise<Micros> {
    const [row] = await this.query<{ balance_micros: number }>(`WITH u AS (
        UPDATE orgs SET balance_micros = balance_micros + $2::bigint WHERE id = $1 AND balance_micros + $2::bigint >= 0 RETURNING id, balance_micros),
      l AS (INSERT INTO ledger (org_id, kind, amount_micros, note, created_at) SELECT id, 'credit', $2, $3, $4 FROM u)
      SELECT balance_micros FROM u`, [orgId, amount, note, this.now()]);
    if (!row) throw new RangeError('the balance cannot go below zero');
    return row.balance_micros;
  }

  async createApiKey(orgId: string, prefix: string, hash: string): Promise<ApiKeyRecord> {
    const key: ApiKeyRecord = { id: newId('key'), orgId, prefix, hash, createdAt: this.now(), revokedAt: null };
    await this.query('INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES ($1, $2, $3, $4, $5)', [key.id, orgId, prefix, hash, key.createdAt]);
    return key;
  }

  async findApiKey(prefix: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.query<KeyRow>('SELECT * FROM api_keys WHERE prefix = $1', [prefix]);
    return row && toKey(row);
  }

  async revokeApiKey(prefix: string): Promise<boolean> {
    const rows = await this.query('UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND revoked_at IS NULL RETURNING id', [this.now(), prefix]);
    return rows.length > 0;
  }

  async setProviderKey(orgId: string, providerId: string, key: string): Promise<void> {
    await this.query(`INSERT INTO provider_keys (org_id, provider_id, key, updated_at) VALUES ($1, $2, $3, $4)
      ON CONFLICT (org_id, provider_id) DO UPDATE SET key = EXCLUDED.key, updated_at = EXCLUDED.updated_at`, [orgId, providerId, key, this.now()]);
  }

  async getProviderKey(orgId: string, providerId: string): Promise<string | undefined> {
    const [row] = await this.query<{ key: string }>('SELECT key FROM provider_keys WHERE org_id = $1 AND provider_id = $2', [orgId, providerId]);
    return row?.key;
  }

  async listProviderKeyProviders(orgId: string): Promise<string[]> {
    const rows = await this.query<{ provider_id: string }>('SELECT provider_id FROM provider_keys WHERE org_id = $1 ORDER BY provider_id', [orgId]);
    return rows.map((r) => r.provider_id);
  }

  /*
   * The debit and the reservation row are one statement, hence one transaction: a
   * duplicate request id fails the insert and undoes the debit with it. One round trip
   * instead of four keeps pooled connections free on the hot path.
   */
  async reserve(orgId: string, requestId: string, amount: Micros): Promise<boolean> {
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
    const [row] = await this.query<{ n: number }>(`WITH r AS (DELETE FROM reservations WHERE request_id IN (
          SELECT request_id FROM reservations WHERE created_at < $1 ORDER BY request_id FOR UPDATE)
        RETURNING org_id, amount_micros),
      per_org AS (SELECT org_id, SUM(amount_micros)::bigint AS amount FROM r GROUP BY org_id),
      refund AS (UPDATE orgs SET balance_micros = orgs.balance_micros + per_org.amount FROM per_org WHERE orgs.id = per_org.org_id)
      SELECT COUNT(*) AS n FROM r`, [olderThan]);
    return row?.n ?? 0;
  }

  async insertLogs(rows: readonly LogRow[]): Promise<void> {
    // ON CONFLICT cannot touch one row twice in a statement; SQLite's INSERT OR REPLACE keeps the last, so do we.
    const unique = [...new Map(rows.map((r) => [r.requestId, r])).values()];
    if (unique.length === 0) return;
    const db = unique.map(toLogDb);
    await this.query(INSERT_LOGS, LOG_COLUMNS.map(([column]) => db.map((r) => r[column])));
  }

  async getLog(requestId: string): Promise<LogRow | undefined> {
    const [row] = await this.query<LogDbRow>('SELECT * FROM request_logs WHERE request_id = $1 OR id = $1 LIMIT 1', [requestId]);
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

  private async query<R extends object = Record<string, unknown>>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    await this.ensureSchema();
    return (await this.pool.query<R>(sql, params.map(storable))).rows;
  }

  /** Creates the schema once per instance; a failure (database down) is retried by the next call. */
  private ensureSchema(): Promise<void> {
    this.schemaReady ??= this.createSchema().catch((err: unknown) => {
      this.schemaReady = undefined;
      throw err;
    });
    return this.schemaReady;
  }

  private async createSchema(): Promise<void> {
    await this.transaction(async (client) => {
      // Concurrent CREATE … IF NOT EXISTS can still collide in the catalogue; instances starting together take turns.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('tollgate.schema'))");
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.pg.escapeIdentifier(this.schema)}`);
      await client.query(SCHEMA + MEDIA_SCHEMA_POSTGRES);
    });
  }

  private async transaction(work: (client: PoolClient) => Promise<void>): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await work(client);
      await client.query('COMMIT');
    } catch (err) {
      // A connection that cannot even roll back is discarded rather than returned to the pool.
      await client.query('ROLLBACK').catch((e: Error) => { broken = e; });
      throw err;
    } finally {
      client.release(broken);
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

/** The id mirrors SQLite's: `log_` + the request id after `req_`. */
function toLogDb(r: LogRow): Record<LogColumn, Scalar> {
  return {
    id: `log_${r.requestId.slice(4)}`, request_id: r.requestId, org_id: r.orgId, api_key_id: r.apiKeyId, modality: r.modality,
    requested_model: r.requestedModel, used_model: r.usedModel, used_provider: r.usedProvider, status: r.status,
    error_code: r.errorCode, cost_micros: r.costMicros, cost_estimated: r.costEstimated, byok: r.byok,
    duration_ms: Math.round(r.durationMs), ttfb_ms: r.ttfbMs === null ? null : Math.round(r.ttfbMs), prompt: r.prompt,
    attempts: JSON.stringify(r.attempts), extra: r.extra ? JSON.stringify(r.extra) : null, created_at: r.createdAt,
  };
}

function fromLogDb(r: LogDbRow): LogRow {
  return {
    requestId: r.request_id, orgId: r.org_id, apiKeyId: r.api_key_id, modality: r.modality, requestedModel: r.requested_model,
    usedModel: r.used_model, usedProvider: r.used_provider, status: r.status, errorCode: r.error_code, costMicros: r.cost_micros,
    costEstimated: r.cost_estimated, byok: r.byok, durationMs: r.duration_ms, ttfbMs: r.ttfb_ms, prompt: r.prompt,
    attempts: r.attempts, createdAt: r.created_at, extra: r.extra,
  };
}
