import type { SqlDb } from './sql.js';
import type { ApiKeyRecord } from '../model/records.js';
import { toKey, type KeyRow } from './rows.js';

/** What a deactivation did: `last_owner` when it would leave one of the user's orgs with no active owner. */
export type ActivationChange = 'ok' | 'not_found' | 'last_owner';

/**
 * The account lifecycle (docs/management.md "Account lifecycle"): password changes, user
 * deactivation, API key rotation. Nothing here is cached by the gateway except the API
 * keys (src/tenancy/auth.ts), which the callers announce on the invalidation bus.
 */
export interface LifecycleStore {
  /** The user's password hash; null when they have none (an SSO user), undefined when there is no such user. */
  passwordHashOf(userId: string): Promise<string | null | undefined>;
  /** Sets a new password hash and ends every session of the user but `keepSession` (a session id). */
  changePassword(userId: string, hash: string, keepSession: string | undefined): Promise<void>;
  /**
   * Deactivates (ending every session at once) or reactivates a user. A deactivation that
   * would leave an org the user owns without another active owner is refused (`last_owner`).
   */
  setActive(userId: string, active: boolean): Promise<ActivationChange>;
  /**
   * Gives a live key a new secret (`hash`): the current one becomes the previous one,
   * accepted until `previousExpiresAt`. Undefined when the org has no such live key.
   */
  rotateKey(orgId: string, keyId: string, hash: string, previousExpiresAt: number): Promise<ApiKeyRecord | undefined>;
}

/** An org the user owns where no other active user is an owner. */
const OWNS_ALONE = `EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = ? AND m.role = 'owner' AND NOT EXISTS (
  SELECT 1 FROM memberships o JOIN users u ON u.id = o.user_id
  WHERE o.org_id = m.org_id AND o.role = 'owner' AND o.user_id <> m.user_id AND u.deactivated_at IS NULL))`;

export class SqlLifecycleStore implements LifecycleStore {
  constructor(private readonly db: SqlDb, private readonly now: () => number) {}

  async passwordHashOf(userId: string): Promise<string | null | undefined> {
    const [row] = await this.db.all<{ password_hash: string | null }>('SELECT password_hash FROM users WHERE id = ?', [userId]);
    if (!row) return undefined;
    return row.password_hash ? row.password_hash : null;
  }

  async changePassword(userId: string, hash: string, keepSession: string | undefined): Promise<void> {
    const write = async (db: SqlDb): Promise<void> => {
      await db.run('UPDATE users SET password_hash = ? WHERE id = ?', [hash, userId]);
      await db.run('DELETE FROM sessions WHERE user_id = ? AND id <> ?', [userId, keepSession ?? '']);
    };
    if (this.db.transaction) await this.db.transaction(write);
    else await write(this.db);
  }

  async setActive(userId: string, active: boolean): Promise<ActivationChange> {
    if (active) {
      return (await this.db.run('UPDATE users SET deactivated_at = NULL WHERE id = ?', [userId])) > 0 ? 'ok' : 'not_found';
    }
    const write = async (db: SqlDb): Promise<number> => {
      if (this.db.transaction) {
        // PostgreSQL: the owner rows of the user's orgs are locked first, as removals of owners do
        // (accounts.ts), so two owners deactivated at once take turns and the second sees the first.
        await db.all(`SELECT user_id FROM memberships WHERE role = 'owner' AND org_id IN (
          SELECT org_id FROM memberships WHERE user_id = ? AND role = 'owner') ORDER BY org_id, user_id FOR UPDATE`, [userId]);
      }
      const changed = await db.run(`UPDATE users SET deactivated_at = COALESCE(deactivated_at, ?) WHERE id = ? AND NOT ${OWNS_ALONE}`, [this.now(), userId, userId]);
      if (changed > 0) await db.run('DELETE FROM sessions WHERE user_id = ?', [userId]);
      return changed;
    };
    const changed = this.db.transaction ? await this.db.transaction(write) : await write(this.db);
    if (changed > 0) return 'ok';
    const [row] = await this.db.all<{ id: string }>('SELECT id FROM users WHERE id = ?', [userId]);
    return row ? 'last_owner' : 'not_found';
  }

  async rotateKey(orgId: string, keyId: string, hash: string, previousExpiresAt: number): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.db.all<KeyRow>(`UPDATE api_keys SET previous_hash = hash, previous_expires_at = ?, hash = ?
      WHERE id = ? AND org_id = ? AND revoked_at IS NULL RETURNING *`, [previousExpiresAt, hash, keyId, orgId]);
    return row && toKey(row);
  }
}
