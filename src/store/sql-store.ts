import type { Micros } from '../lib/money.js';
import type { SecretBox } from '../lib/secrets.js';
import { SqlAuditStore } from './audit-store.js';
import { SqlAccountStore } from './accounts.js';
import { SqlLifecycleStore } from './lifecycle.js';
import { SqlLimitsStore } from './limits-store.js';
import { SqlLogQueryStore } from './log-query.js';
import { SqlProviderKeyStore } from './provider-key-store.js';
import { fromLogDb, ORG_COLUMNS, toKey, toOrg, type KeyRow, type OrgRow, type StoredLogRow } from './rows.js';
import type { SqlDb } from './sql.js';
import { SqlTenancyStore } from './tenancy.js';
import { SqlBodyStore } from './bodies-store.js';
import type { ApiKeyRecord, LogRow, Org, Retention } from '../model/records.js';
import { SqlWebhookStore } from './webhook-store.js';

/**
 * The part of a Store that is the same SQL on both drivers, written once over the shared
 * adapter (sql.ts): the management sub-stores, org and key look-ups, log reads and the
 * audit sums. A driver (sqlite.ts, postgres.ts) adds only its ledger: creating orgs,
 * credits, reservations, settlements, log batches and the whole-ledger audit.
 */
export abstract class SqlStoreBase {
  readonly tenancy: SqlTenancyStore;
  readonly accounts: SqlAccountStore;
  readonly lifecycle: SqlLifecycleStore;
  readonly logQuery: SqlLogQueryStore;
  readonly bodies: SqlBodyStore;
  readonly providerKeys: SqlProviderKeyStore;
  readonly limits: SqlLimitsStore;
  readonly webhooks: SqlWebhookStore;
  readonly auditLog: SqlAuditStore;

  constructor(protected readonly sql: SqlDb, protected readonly now: () => number, secrets: SecretBox | undefined) {
    this.tenancy = new SqlTenancyStore(sql, now, { heldFor: (orgId) => this.heldFor(orgId), steady: () => this.steady() });
    this.accounts = new SqlAccountStore(sql, now);
    this.lifecycle = new SqlLifecycleStore(sql, now);
    this.logQuery = new SqlLogQueryStore(sql);
    this.bodies = new SqlBodyStore(sql);
    this.providerKeys = new SqlProviderKeyStore(sql, secrets, now);
    this.limits = new SqlLimitsStore(sql);
    this.webhooks = new SqlWebhookStore(sql, secrets, now);
    this.auditLog = new SqlAuditStore(sql, now);
  }

  /** What this process holds of an org's balance in memory (reservations, charges not written); 0 where nothing is. */
  protected abstract heldFor(orgId: string): Micros;
  /** Resolves when a read of the stored balance agrees with heldFor (no charge batch half-written). */
  protected abstract steady(): Promise<void>;
  /** Writes what this process holds of the ledger in memory, so the sums below see it. */
  protected abstract written(): Promise<void>;

  async ping(): Promise<void> {
    await this.sql.all('SELECT 1');
  }

  async getOrg(id: string): Promise<Org | undefined> {
    return this.orgWhere('o.id = ?', id);
  }

  async findOrgByName(name: string): Promise<Org | undefined> {
    return this.orgWhere('o.name = ?', name);
  }

  /** The stored balance (balance slices counted) less what this process holds of it. */
  private async orgWhere(where: string, value: string): Promise<Org | undefined> {
    await this.steady();
    const [row] = await this.sql.all<OrgRow>(`SELECT ${ORG_COLUMNS} FROM orgs o WHERE ${where}`, [value]);
    if (!row) return undefined;
    const org = toOrg(row);
    org.balanceMicros -= this.heldFor(org.id);
    return org;
  }

  async countOrgs(): Promise<number> {
    const [row] = await this.sql.all<{ n: number }>('SELECT COUNT(*) AS n FROM orgs');
    return Number(row?.n ?? 0);
  }

  async setRetention(orgId: string, retention: Retention): Promise<void> {
    await this.sql.run('UPDATE orgs SET retention = ? WHERE id = ?', [retention, orgId]);
  }

  async findApiKey(prefix: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.sql.all<KeyRow>('SELECT * FROM api_keys WHERE prefix = ?', [prefix]);
    return row && toKey(row);
  }

  async revokeApiKey(prefix: string): Promise<boolean> {
    return (await this.sql.run('UPDATE api_keys SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL', [this.now(), prefix])) > 0;
  }

  async getLog(requestId: string): Promise<LogRow | undefined> {
    const [row] = await this.sql.all<StoredLogRow>('SELECT * FROM request_logs WHERE request_id = ? OR id = ? LIMIT 1', [requestId, requestId]);
    return row && fromLogDb(row);
  }

  async sumCharges(orgId: string): Promise<Micros> {
    await this.written();
    const [row] = await this.sql.all<{ s: number }>(
      "SELECT CAST(COALESCE(SUM(-amount_micros), 0) AS BIGINT) AS s FROM ledger WHERE org_id = ? AND kind = 'charge'", [orgId]);
    return Number(row?.s ?? 0);
  }

  async sumLoggedCosts(orgId: string): Promise<Micros> {
    await this.written();
    const [row] = await this.sql.all<{ s: number }>(
      'SELECT CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT) AS s FROM request_logs WHERE org_id = ? AND NOT byok', [orgId]);
    return Number(row?.s ?? 0);
  }
}
