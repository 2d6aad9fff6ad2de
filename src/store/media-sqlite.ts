import type Database from 'better-sqlite3';
import { fromMediaRow, MEDIA_COLUMNS, toMediaRow, type LeaseStore, type MediaRecord, type MediaRow, type MediaStore } from './media.js';

const asRecord = (row: MediaRow | undefined): MediaRecord | undefined => row && fromMediaRow(row);

export class SqliteMediaStore implements MediaStore {
  private readonly insert;

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(`INSERT OR REPLACE INTO media (${MEDIA_COLUMNS.join(', ')}) VALUES (${MEDIA_COLUMNS.map((c) => `@${c}`).join(', ')})`);
  }

  async put(record: MediaRecord): Promise<void> {
    const row = toMediaRow(record);
    this.insert.run({ ...row, error: row.error ? 1 : 0 });
  }

  async get(id: string): Promise<MediaRecord | undefined> {
    return asRecord(this.db.prepare('SELECT * FROM media WHERE id = ? OR request_id = ?').get(id, id) as MediaRow | undefined);
  }

  async list(orgId: string, modality: string, limit: number): Promise<MediaRecord[]> {
    const rows = this.db.prepare('SELECT * FROM media WHERE org_id = ? AND modality = ? ORDER BY created_at DESC, id DESC LIMIT ?')
      .all(orgId, modality, limit) as MediaRow[];
    return rows.map(fromMediaRow);
  }

  async listExpired(now: number, limit: number, modality?: string): Promise<MediaRecord[]> {
    const rows = this.db.prepare(`SELECT * FROM media WHERE storage = 's3' AND cleaned_at IS NULL AND expires_at <= ?
      AND (claimed_until IS NULL OR claimed_until <= ?) AND (? IS NULL OR modality = ?) ORDER BY expires_at LIMIT ?`)
      .all(now, now, modality ?? null, modality ?? null, limit) as MediaRow[];
    return rows.map(fromMediaRow);
  }

  async claim(id: string, now: number, until: number): Promise<MediaRecord | undefined> {
    return asRecord(this.db.prepare(`UPDATE media SET claimed_until = ? WHERE id = ? AND storage = 's3' AND cleaned_at IS NULL
      AND (claimed_until IS NULL OR claimed_until <= ?) RETURNING *`).get(until, id, now) as MediaRow | undefined);
  }

  async unclaim(id: string): Promise<void> {
    this.db.prepare('UPDATE media SET claimed_until = NULL WHERE id = ? AND cleaned_at IS NULL').run(id);
  }

  async markCleaned(id: string, at: number): Promise<void> {
    this.db.prepare('UPDATE media SET cleaned_at = ?, claimed_until = NULL WHERE id = ?').run(at, id);
  }

  async clearText(before: number): Promise<number> {
    return this.db.transaction(() => {
      const n = this.db.prepare('UPDATE media SET prompt = NULL, text = NULL WHERE created_at < ? AND (prompt IS NOT NULL OR text IS NOT NULL)').run(before).changes;
      this.db.prepare('UPDATE request_logs SET prompt = NULL WHERE created_at < ? AND prompt IS NOT NULL').run(before);
      return n;
    })();
  }
}

export class SqliteLeaseStore implements LeaseStore {
  constructor(private readonly db: Database.Database) {}

  async tryAcquire(name: string, holder: string, ttlMs: number, now: number): Promise<boolean> {
    // One statement: insert, or take over a lease that expired or is already ours.
    return this.db.prepare(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE leases.expires_at <= ? OR leases.holder = excluded.holder`).run(name, holder, now + ttlMs, now).changes > 0;
  }

  async release(name: string, holder: string): Promise<void> {
    this.db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(name, holder);
  }
}
