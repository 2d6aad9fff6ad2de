import { maskSecret, type SecretBox, SecretKeyMissingError } from '../lib/secrets.js';
import type { SqlDb } from './sql.js';

/** The format of a sealed `provider_keys.key`: 1 = AES-256-GCM (src/lib/secrets.ts); NULL = round-1 plaintext. */
const SEALED_V1 = 1;

export interface ProviderKeyInfo {
  providerId: string;
  /** The key as lists show it (`sk-…abcd`); never the key itself. */
  masked: string;
  updatedAt: number;
  /** The console user who set it; null for the CLI. */
  updatedBy: string | null;
}

/**
 * Each org's own provider keys (bring your own key), encrypted at rest: the table holds
 * only AES-256-GCM ciphertext bound to its org and provider, and the masked form lists
 * show. The secret key lives outside the database (see src/lib/secrets.ts), so a dump of
 * the database alone reveals no provider key.
 */
export interface ProviderKeyStore {
  /** Seals and stores (or replaces) the org's key for a provider. */
  set(orgId: string, providerId: string, key: string, actor?: string | null, at?: number): Promise<ProviderKeyInfo>;
  /** False when the org had no key for that provider. */
  delete(orgId: string, providerId: string): Promise<boolean>;
  /** The org's keys, masked, by provider id. */
  list(orgId: string): Promise<ProviderKeyInfo[]>;
  /** The org's keys in clear, by provider id (for the upstream call). */
  keysOf(orgId: string): Promise<Map<string, string>>;
  /**
   * Seals the plaintext rows a round-1 database holds and checks that every sealed row
   * opens with the configured key. Run when the gateway starts: a wrong or missing key
   * is then a start-up error naming the fix, not a failed request later.
   */
  sealPlaintext(): Promise<{ sealed: number; checked: number }>;
}

interface Row { org_id: string; provider_id: string; key: string; key_version: number | null; masked: string | null; updated_at: number; updated_by: string | null }

const context = (orgId: string, providerId: string): string => `provider_keys:${orgId}:${providerId}`;

export class SqlProviderKeyStore implements ProviderKeyStore {
  constructor(private readonly db: SqlDb, private readonly box: SecretBox | undefined, private readonly now: () => number) {}

  private requireBox(what: string): SecretBox {
    if (!this.box) throw new SecretKeyMissingError(what);
    return this.box;
  }

  async set(orgId: string, providerId: string, key: string, actor: string | null = null, at = this.now()): Promise<ProviderKeyInfo> {
    const sealed = this.requireBox('cannot store a provider key').seal(key, context(orgId, providerId));
    const masked = maskSecret(key);
    await this.db.run(`INSERT INTO provider_keys (org_id, provider_id, key, key_version, masked, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (org_id, provider_id) DO UPDATE SET key = excluded.key, key_version = excluded.key_version, masked = excluded.masked,
        updated_at = excluded.updated_at, updated_by = excluded.updated_by`, [orgId, providerId, sealed, SEALED_V1, masked, at, actor]);
    return { providerId, masked, updatedAt: at, updatedBy: actor };
  }

  async delete(orgId: string, providerId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM provider_keys WHERE org_id = ? AND provider_id = ?', [orgId, providerId])) > 0;
  }

  async list(orgId: string): Promise<ProviderKeyInfo[]> {
    const rows = await this.db.all<Row>('SELECT * FROM provider_keys WHERE org_id = ? ORDER BY provider_id', [orgId]);
    return rows.map((r) => ({ providerId: r.provider_id, masked: r.masked ?? '…', updatedAt: r.updated_at, updatedBy: r.updated_by }));
  }

  async keysOf(orgId: string): Promise<Map<string, string>> {
    const rows = await this.db.all<Row>('SELECT * FROM provider_keys WHERE org_id = ?', [orgId]);
    const keys = new Map<string, string>();
    for (const r of rows) keys.set(r.provider_id, this.open(r));
    return keys;
  }

  private open(r: Row): string {
    if (r.key_version === null) return r.key; // a round-1 row not sealed yet (only between migration and the first start)
    if (r.key_version !== SEALED_V1) throw new Error(`provider key of ${r.org_id}/${r.provider_id} has unknown format ${r.key_version}`);
    return this.requireBox('cannot read the stored provider keys').open(r.key, context(r.org_id, r.provider_id));
  }

  async sealPlaintext(): Promise<{ sealed: number; checked: number }> {
    const rows = await this.db.all<Row>('SELECT * FROM provider_keys');
    let sealed = 0;
    let unreadable = 0;
    for (const r of rows) {
      if (r.key_version === null) {
        const box = this.requireBox(`${rows.filter((x) => x.key_version === null).length} provider key(s) are stored in plaintext and cannot be encrypted`);
        // Conditional on the plaintext still being there: another process sealing it at the same time wins once.
        sealed += await this.db.run('UPDATE provider_keys SET key = ?, key_version = ?, masked = ? WHERE org_id = ? AND provider_id = ? AND key_version IS NULL AND key = ?',
          [box.seal(r.key, context(r.org_id, r.provider_id)), SEALED_V1, maskSecret(r.key), r.org_id, r.provider_id, r.key]);
        continue;
      }
      try {
        this.open(r);
      } catch (err) {
        if (err instanceof SecretKeyMissingError) throw err;
        unreadable++;
      }
    }
    if (unreadable > 0) throw new Error(`${unreadable} stored provider key(s) do not decrypt with the configured secret key: it is not the key they were encrypted with`);
    return { sealed, checked: rows.length };
  }
}
