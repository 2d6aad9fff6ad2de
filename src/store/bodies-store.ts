import type { StoredBodies } from '../model/guardrails.js';
import type { SqlDb } from './sql.js';

/** Request and response bodies of the projects that log them (docs/guardrails.md), beside the log, never in its list's rows. */
export interface BodyStore {
  /** Writes the bodies of a batch of logged requests (a replayed row's replace its own). */
  insert(bodies: readonly StoredBodies[]): Promise<void>;
  /** The bodies of one request of this org, if still kept. */
  get(orgId: string, requestId: string): Promise<StoredBodies | undefined>;
  /** Deletes the bodies past their retention, at most `limit`; returns how many. */
  deleteExpired(now: number, limit: number): Promise<number>;
}

interface BodyRow {
  request_id: string; org_id: string; created_at: number | string; expires_at: number | string;
  request: string | null; response: string | null; truncated: boolean | number;
}

export class SqlBodyStore implements BodyStore {
  constructor(private readonly db: SqlDb) {}

  async insert(bodies: readonly StoredBodies[]): Promise<void> {
    if (bodies.length === 0) return;
    const upsert = this.db.dialect === 'postgres'
      ? `INSERT INTO request_bodies (request_id, org_id, created_at, expires_at, request, response, truncated) VALUES (?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT (request_id) DO UPDATE SET request = EXCLUDED.request, response = EXCLUDED.response, truncated = EXCLUDED.truncated`
      : 'INSERT OR REPLACE INTO request_bodies (request_id, org_id, created_at, expires_at, request, response, truncated) VALUES (?, ?, ?, ?, ?, ?, ?)';
    await this.db.runMany(upsert, bodies.map((b) => [b.requestId, b.orgId, b.createdAt, b.expiresAt, b.request, b.response, b.truncated]));
  }

  async get(orgId: string, requestId: string): Promise<StoredBodies | undefined> {
    const [r] = await this.db.all<BodyRow>('SELECT * FROM request_bodies WHERE request_id = ? AND org_id = ?', [requestId, orgId]);
    return r && {
      requestId: r.request_id, orgId: r.org_id, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at),
      request: r.request, response: r.response, truncated: r.truncated === true || r.truncated === 1,
    };
  }

  async deleteExpired(now: number, limit: number): Promise<number> {
    return this.db.run('DELETE FROM request_bodies WHERE request_id IN (SELECT request_id FROM request_bodies WHERE expires_at <= ? LIMIT ?)', [now, limit]);
  }
}
