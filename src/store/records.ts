import type Database from 'better-sqlite3';
import type { Query } from './media-postgres.js';

/**
 * A small org-scoped JSON document a plugin keeps for a while, in the shared database
 * so every instance sees it (e.g. stored Responses API responses, which a later
 * request continues with `previous_response_id`).
 */
export interface StoredRecord {
  /** What the record is (`response`); ids are unique per kind. */
  kind: string;
  id: string;
  orgId: string;
  /** JSON-serialisable. */
  data: unknown;
  createdAt: number;
  /** After this instant the record is gone: never read, deleted by `deleteExpired`. */
  expiresAt: number;
}

export interface RecordStore {
  /** Writes (or replaces) a record, then drops the org's oldest records of its kind beyond `keep`. */
  put(record: StoredRecord, keep: number): Promise<void>;
  /** The org's unexpired record of that kind and id; never another org's. */
  get(kind: string, orgId: string, id: string, now: number): Promise<StoredRecord | undefined>;
  /** Deletes the org's record; false when it had none (or it belonged to another org). */
  delete(kind: string, orgId: string, id: string): Promise<boolean>;
  /** Deletes up to `limit` expired records of any kind; returns how many. */
  deleteExpired(now: number, limit: number): Promise<number>;
}

interface RecordRow {
  kind: string; id: string; org_id: string; data: string; created_at: number | string; expires_at: number | string;
}

function fromRow(r: RecordRow): StoredRecord {
  return { kind: r.kind, id: r.id, orgId: r.org_id, data: JSON.parse(r.data) as unknown, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at) };
}

export class SqliteRecordStore implements RecordStore {
  constructor(private readonly db: Database.Database) {}

  async put(r: StoredRecord, keep: number): Promise<void> {
    this.db.transaction(() => {
      this.db.prepare(`INSERT OR REPLACE INTO org_records (kind, id, org_id, data, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`)
        .run(r.kind, r.id, r.orgId, JSON.stringify(r.data), r.createdAt, r.expiresAt);
      this.db.prepare(`DELETE FROM org_records WHERE kind = ? AND id IN (SELECT id FROM org_records WHERE kind = ? AND org_id = ?
        ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`).run(r.kind, r.kind, r.orgId, keep);
    })();
  }

  async get(kind: string, orgId: string, id: string, now: number): Promise<StoredRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM org_records WHERE kind = ? AND id = ? AND org_id = ? AND expires_at > ?').get(kind, id, orgId, now) as RecordRow | undefined;
    return row && fromRow(row);
  }

  async delete(kind: string, orgId: string, id: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM org_records WHERE kind = ? AND id = ? AND org_id = ?').run(kind, id, orgId).changes > 0;
  }

  async deleteExpired(now: number, limit: number): Promise<number> {
    return this.db.prepare(`DELETE FROM org_records WHERE rowid IN (SELECT rowid FROM org_records WHERE expires_at <= ? LIMIT ?)`).run(now, limit).changes;
  }
}

export class PostgresRecordStore implements RecordStore {
  constructor(private readonly query: Query) {}

  async put(r: StoredRecord, keep: number): Promise<void> {
    // One statement: the write and the trim commit together, whatever instance runs them.
    await this.query(`WITH w AS (INSERT INTO org_records (kind, id, org_id, data, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (kind, id) DO UPDATE SET org_id = EXCLUDED.org_id, data = EXCLUDED.data, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
        RETURNING id)
      DELETE FROM org_records WHERE kind = $1 AND id IN (SELECT id FROM org_records WHERE kind = $1 AND org_id = $3 AND id NOT IN (SELECT id FROM w)
        ORDER BY created_at DESC, id DESC OFFSET $7)`, [r.kind, r.id, r.orgId, JSON.stringify(r.data), r.createdAt, r.expiresAt, Math.max(0, keep - 1)]);
  }

  async get(kind: string, orgId: string, id: string, now: number): Promise<StoredRecord | undefined> {
    const [row] = await this.query<RecordRow>('SELECT * FROM org_records WHERE kind = $1 AND id = $2 AND org_id = $3 AND expires_at > $4', [kind, id, orgId, now]);
    return row && fromRow(row);
  }

  async delete(kind: string, orgId: string, id: string): Promise<boolean> {
    return (await this.query('DELETE FROM org_records WHERE kind = $1 AND id = $2 AND org_id = $3 RETURNING 1', [kind, id, orgId])).length > 0;
  }

  async deleteExpired(now: number, limit: number): Promise<number> {
    const rows = await this.query(`DELETE FROM org_records WHERE (kind, id) IN (SELECT kind, id FROM org_records WHERE expires_at <= $1 LIMIT $2) RETURNING 1`, [now, limit]);
    return rows.length;
  }
}
