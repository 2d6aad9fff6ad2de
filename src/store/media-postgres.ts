import { fromMediaRow, MEDIA_COLUMNS, toMediaRow, type LeaseStore, type MediaRecord, type MediaRow, type MediaStore } from './media.js';

type Scalar = string | number | boolean | null;
/** The driver's query function (schema ensured, NUL made storable). */
export type Query = <R extends object>(sql: string, params?: readonly Scalar[]) => Promise<R[]>;

export class PostgresMediaStore implements MediaStore {
  constructor(private readonly query: Query) {}

  async put(record: MediaRecord): Promise<void> {
    const row = toMediaRow(record);
    await this.query(`INSERT INTO media (${MEDIA_COLUMNS.join(', ')}) VALUES (${MEDIA_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})
      ON CONFLICT (id) DO UPDATE SET ${MEDIA_COLUMNS.filter((c) => c !== 'id').map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`,
    MEDIA_COLUMNS.map((c) => row[c]));
  }

  async get(id: string): Promise<MediaRecord | undefined> {
    const [row] = await this.query<MediaRow>('SELECT * FROM media WHERE id = $1 OR request_id = $1', [id]);
    return row && fromMediaRow(row);
  }

  async list(orgId: string, modality: string, limit: number): Promise<MediaRecord[]> {
    const rows = await this.query<MediaRow>('SELECT * FROM media WHERE org_id = $1 AND modality = $2 ORDER BY created_at DESC, id DESC LIMIT $3', [orgId, modality, limit]);
    return rows.map(fromMediaRow);
  }

  async listExpired(now: number, limit: number, modality?: string): Promise<MediaRecord[]> {
    const rows = await this.query<MediaRow>(`SELECT * FROM media WHERE storage = 's3' AND cleaned_at IS NULL AND expires_at <= $1
      AND (claimed_until IS NULL OR claimed_until <= $1) AND ($3::text IS NULL OR modality = $3) ORDER BY expires_at LIMIT $2`, [now, limit, modality ?? null]);
    return rows.map(fromMediaRow);
  }

  async claim(id: string, now: number, until: number): Promise<MediaRecord | undefined> {
    const [row] = await this.query<MediaRow>(`UPDATE media SET claimed_until = $3 WHERE id = $1 AND storage = 's3' AND cleaned_at IS NULL
      AND (claimed_until IS NULL OR claimed_until <= $2) RETURNING *`, [id, now, until]);
    return row && fromMediaRow(row);
  }

  async unclaim(id: string): Promise<void> {
    await this.query('UPDATE media SET claimed_until = NULL WHERE id = $1 AND cleaned_at IS NULL', [id]);
  }

  async markCleaned(id: string, at: number): Promise<void> {
    await this.query('UPDATE media SET cleaned_at = $2, claimed_until = NULL WHERE id = $1', [id, at]);
  }

  async clearText(before: number): Promise<number> {
    const rows = await this.query<{ n: number }>(`WITH m AS (UPDATE media SET prompt = NULL, text = NULL
        WHERE created_at < $1 AND (prompt IS NOT NULL OR text IS NOT NULL) RETURNING 1),
      l AS (UPDATE request_logs SET prompt = NULL WHERE created_at < $1 AND prompt IS NOT NULL RETURNING 1)
      SELECT (SELECT COUNT(*) FROM m)::int AS n, (SELECT COUNT(*) FROM l)::int AS logs`, [before]);
    return rows[0]?.n ?? 0;
  }
}

export class PostgresLeaseStore implements LeaseStore {
  constructor(private readonly query: Query) {}

  async tryAcquire(name: string, holder: string, ttlMs: number, now: number): Promise<boolean> {
    const rows = await this.query(`INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3)
      ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
      WHERE leases.expires_at <= $4 OR leases.holder = EXCLUDED.holder RETURNING 1`, [name, holder, now + ttlMs, now]);
    return rows.length > 0;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.query('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]);
  }
}
