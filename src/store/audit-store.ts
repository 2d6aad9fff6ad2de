import { newId } from '../lib/ids.js';
import type { SqlDb, SqlParam } from './sql.js';
import { maskSecrets } from '../lib/mask-secrets.js';
import type { AuditCursor, AuditEntry, AuditFilter, AuditRow, AuditStore } from '../model/audit.js';

interface Row {
  id: string; at: number | string; org_id: string | null; actor_type: AuditRow['actor']['type']; actor_id: string | null; actor_email: string | null;
  token_id: string | null; ip: string | null; user_agent: string | null; action: string; target_type: string | null; target_id: string | null;
  before_json: string | null; after_json: string | null;
}

const parse = (text: string | null): Record<string, unknown> | null => (text === null ? null : (JSON.parse(text) as Record<string, unknown>));
const text = (value: Record<string, unknown> | null): string | null => (value === null ? null : JSON.stringify(maskSecrets(value)));

function fromDb(r: Row): AuditRow {
  return {
    id: r.id, at: Number(r.at), orgId: r.org_id, action: r.action, targetType: r.target_type, targetId: r.target_id,
    actor: { type: r.actor_type, userId: r.actor_id, email: r.actor_email, tokenId: r.token_id }, ip: r.ip, userAgent: r.user_agent,
    before: parse(r.before_json), after: parse(r.after_json),
  };
}

function where(f: AuditFilter): { sql: string; params: SqlParam[] } {
  const parts: string[] = [];
  const params: SqlParam[] = [];
  const add = (cond: string, ...values: SqlParam[]): void => {
    parts.push(cond);
    params.push(...values);
  };
  if (f.orgId !== undefined) add('org_id = ?', f.orgId);
  if (f.actor !== undefined) {
    if (f.actor === 'cli') parts.push("actor_type = 'cli'");
    else add('(actor_id = ? OR token_id = ? OR actor_email = ?)', f.actor, f.actor, f.actor.toLowerCase());
  }
  if (f.action !== undefined) {
    if (f.action.endsWith('.')) add('substr(action, 1, ?) = ?', f.action.length, f.action);
    else add('action = ?', f.action);
  }
  if (f.target !== undefined) add('target_id = ?', f.target);
  if (f.from !== undefined) add('at >= ?', f.from);
  if (f.to !== undefined) add('at < ?', f.to);
  return { sql: parts.length ? parts.join(' AND ') : '1 = 1', params };
}

/**
 * The audit log over either database. The only statements on `audit_log` are the
 * INSERT of `append`, the SELECT of `list` and the retention DELETE of `sweep`; the
 * table refuses UPDATE (migration 13). Secrets are masked again here, whatever the
 * caller passed.
 */
export class SqlAuditStore implements AuditStore {
  constructor(private readonly db: SqlDb, private readonly now: () => number) {}

  async append(e: AuditEntry, at = this.now()): Promise<AuditRow> {
    const id = newId('aud');
    await this.db.run(`INSERT INTO audit_log (id, at, org_id, actor_type, actor_id, actor_email, token_id, ip, user_agent, action, target_type, target_id, before_json, after_json)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [id, at, e.orgId, e.actor.type, e.actor.userId, e.actor.email?.toLowerCase() ?? null, e.actor.tokenId,
      e.ip, e.userAgent?.slice(0, 500) ?? null, e.action, e.targetType, e.targetId, text(e.before), text(e.after)]);
    return { ...e, id, at, before: parse(text(e.before)), after: parse(text(e.after)) };
  }

  async list(filter: AuditFilter, limit: number, cursor?: AuditCursor): Promise<AuditRow[]> {
    const w = where(filter);
    const after = cursor ? ' AND (at, id) < (?, ?)' : '';
    const params = cursor ? [...w.params, cursor.at, cursor.id, limit] : [...w.params, limit];
    const rows = await this.db.all<Row>(`SELECT * FROM audit_log WHERE ${w.sql}${after} ORDER BY at DESC, id DESC LIMIT ?`, params);
    return rows.map(fromDb);
  }

  async sweep(before: number): Promise<number> {
    return this.db.run('DELETE FROM audit_log WHERE at < ?', [before]);
  }
}
