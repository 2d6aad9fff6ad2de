import type { SqlDb } from './sql.js';

/** One OIDC sign-in in progress: what the callback checks the provider's answer against. */
export interface OidcFlow {
  nonce: string;
  codeVerifier: string;
  expiresAt: number;
}

/** A password hash no password verifies (src/tenancy/passwords.ts needs `scrypt$…`): users created by SSO have none. */
export const NO_PASSWORD = 'sso:no-password';

/** What OIDC sign-in keeps in the database (migration 012), for any instance to finish a flow another started. */
export interface SsoStore {
  /** Records a flow under the hash of its state. */
  saveFlow(stateHash: string, flow: OidcFlow): Promise<void>;
  /**
   * Takes (deletes) the live flow of this state hash and returns it; undefined when there
   * is none, it expired, or another callback took it first (one statement decides).
   */
  takeFlow(stateHash: string): Promise<OidcFlow | undefined>;
  /** Deletes expired flows; returns how many. */
  purgeFlows(): Promise<number>;
  /** Sets a user's instance-wide operator flag (from the provider's groups at each sign-in). */
  setOperator(userId: string, operator: boolean): Promise<void>;
}

interface FlowRow { nonce: string; code_verifier: string; expires_at: number | string }

export class SqlSsoStore implements SsoStore {
  constructor(private readonly db: SqlDb, private readonly now: () => number) {}

  async saveFlow(stateHash: string, flow: OidcFlow): Promise<void> {
    await this.db.run('INSERT INTO oidc_flows (state_hash, nonce, code_verifier, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      [stateHash, flow.nonce, flow.codeVerifier, this.now(), flow.expiresAt]);
  }

  async takeFlow(stateHash: string): Promise<OidcFlow | undefined> {
    // DELETE … RETURNING (SQLite ≥ 3.35 and PostgreSQL): of two callbacks with the same state, one gets the row.
    const [row] = await this.db.all<FlowRow>('DELETE FROM oidc_flows WHERE state_hash = ? AND expires_at > ? RETURNING nonce, code_verifier, expires_at',
      [stateHash, this.now()]);
    return row && { nonce: row.nonce, codeVerifier: row.code_verifier, expiresAt: Number(row.expires_at) };
  }

  async purgeFlows(): Promise<number> {
    return this.db.run('DELETE FROM oidc_flows WHERE expires_at <= ?', [this.now()]);
  }

  async setOperator(userId: string, operator: boolean): Promise<void> {
    await this.db.run('UPDATE users SET operator = ? WHERE id = ?', [operator, userId]);
  }
}
