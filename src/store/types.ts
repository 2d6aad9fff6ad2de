import type { BodyStore } from './bodies-store.js';
import type { Micros } from '../lib/money.js';
import type { AuditStore } from '../model/audit.js';
import type { AccountStore } from './accounts.js';
import type { LifecycleStore } from './lifecycle.js';
import type { LimitsStore } from './limits-store.js';
import type { LogQueryStore } from './log-query.js';
import type { LeaseStore, MediaStore } from './media.js';
import type { RecordStore } from './records.js';
import type { ProviderKeyStore } from './provider-key-store.js';

/** The ledger note of an org's first credit when its creator names none. */
import type { SqlWebhookStore } from './webhook-store.js';
import type { TenancyStore } from './tenancy.js';
import type { LedgerAudit, LogRow, Org, ApiKeyRecord, Retention, Settlement } from '../model/records.js';

export * from '../model/records.js';

/**
 * Everything the gateway keeps in its database. One interface, two drivers (SQLite
 * embedded, PostgreSQL scale-out); methods are async so either can implement them.
 */
export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /** Records of generated media (music) and their hosting state. */
  readonly media: MediaStore;
  /** Leases for tasks only one instance should run at a time (the retention sweep). */
  readonly leases: LeaseStore;
  /** Org-scoped JSON records with an expiry (stored Responses API responses). */
  readonly records: RecordStore;
  /** Projects, API keys by project, org lists and the credit history (the management API). */
  readonly tenancy: TenancyStore;
  /** Request and response bodies of the projects that log them (docs/guardrails.md). */
  readonly bodies: BodyStore;
  /** Console users, org memberships, sessions and management tokens. */
  readonly accounts: AccountStore;
  /** Password changes, user deactivation and API key rotation. */
  readonly lifecycle: LifecycleStore;
  /** The request log as the management API reads it: filtered pages and usage sums. */
  readonly logQuery: LogQueryStore;
  /** Each org's own provider keys (BYOK), encrypted at rest. */
  readonly providerKeys: ProviderKeyStore;
  /** Limits of keys and projects, and the logged spend budgets are seeded from. */
  readonly limits: LimitsStore;
  /** Webhooks, alert events and the delivery outbox (alerts). */
  readonly webhooks: SqlWebhookStore;
  /** The audit log of changes and sign-ins: appended, listed, swept (src/audit/). */
  readonly auditLog: AuditStore;
  ping(): Promise<void>;
  close(): Promise<void>;

  /**
   * Creates an org and its `default` project; CreditRefusedError for credits past MAX_BALANCE_MICROS.
   * `note`: the first credit's ledger note, what made it (default `initial credits`).
   */
  createOrg(name: string, credits: Micros, retention: Retention, note?: string): Promise<Org>;
  getOrg(id: string): Promise<Org | undefined>;
  findOrgByName(name: string): Promise<Org | undefined>;
  countOrgs(): Promise<number>;
  setRetention(orgId: string, retention: Retention): Promise<void>;
  /**
   * Adds (or with a negative amount removes) credits; returns the new balance. A debit
   * takes only what is free: the balance less what requests in flight hold (their
   * reservations), so their charges always find it; a credit may take the balance up to
   * MAX_BALANCE_MICROS. CreditRefusedError, with nothing written, for either past its
   * bound. `actor` is the console user who did it (null: the CLI).
   */
  addCredits(orgId: string, amount: Micros, note: string, actor?: string | null): Promise<Micros>;

  findApiKey(prefix: string): Promise<ApiKeyRecord | undefined>;
  /** Marks a key revoked; false when no live key has that prefix. */
  revokeApiKey(prefix: string): Promise<boolean>;

  /** Takes `amount` from the balance for this request if the balance covers it; false otherwise. */
  reserve(orgId: string, requestId: string, amount: Micros): Promise<boolean>;
  /**
   * Ends a reservation: charges `cost` (capped at the reserved amount), returns the rest to
   * the balance and records the charge in the ledger. Returns the amount charged.
   */
  settle(requestId: string, cost: Micros): Promise<Micros>;
  /** Returns reservations older than `olderThanMs` to their balances (after a crash). */
  releaseStaleReservations(olderThan: number): Promise<number>;
  /**
   * Settlements decided but not yet written, for these request ids (PostgreSQL server: they
   * are written with their log rows). Empty where charges are written otherwise.
   */
  settlementsFor(requestIds: Iterable<string>): Settlement[];
  /** Takes in settlements a dead process spilled to disk; they are written with their rows. */
  adoptSettlements(settlements: readonly Settlement[]): void;

  insertLogs(rows: readonly LogRow[]): Promise<void>;
  getLog(requestId: string): Promise<LogRow | undefined>;
  /** Sum of ledger charges for an org (for audits and tests). */
  sumCharges(orgId: string): Promise<Micros>;
  /** Sum of the costs in the org's request log rows that were debited (not BYOK): must equal sumCharges. */
  sumLoggedCosts(orgId: string): Promise<Micros>;
  /**
   * The org's whole ledger at once, for audits and tests: what was credited, the stored
   * balance, what reservations hold, what was charged and what the log says was charged.
   * When nothing is in flight: credited − balance − held = charged = logged.
   */
  audit(orgId: string): Promise<LedgerAudit>;
}
