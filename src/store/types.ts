import type { LimitSpec } from '../limits/types.js';
import { formatUsd, MAX_BALANCE_MICROS, type Micros } from '../money.js';
import type { AuditStore } from '../audit/types.js';
import type { AccountStore } from './accounts.js';
import type { LifecycleStore } from './lifecycle.js';
import type { LimitsStore } from './limits-store.js';
import type { LogQueryStore } from './log-query.js';
import type { LeaseStore, MediaStore } from './media.js';
import type { RecordStore } from './records.js';
import type { ProviderKeyStore } from './provider-key-store.js';

/** The ledger note of an org's first credit when its creator names none. */
export const INITIAL_CREDITS_NOTE = 'initial credits';
import type { SqlWebhookStore } from './webhook-store.js';
import type { TenancyStore } from './tenancy.js';

export type Retention = 'standard' | 'none';

export interface Org {
  id: string;
  name: string;
  balanceMicros: Micros;
  retention: Retention;
  createdAt: number;
}

export interface ApiKeyRecord {
  id: string;
  orgId: string;
  /** The project (the console's workspace) the key belongs to; every org has a `default` one. */
  projectId: string;
  /** The readable start of the key (`tg_` + 8 chars), unique, used to find the row. */
  prefix: string;
  /** SHA-256 of the whole key, hex. */
  hash: string;
  /** After a rotation: the old secret's SHA-256, accepted until `previousExpiresAt` (ms); null when none. */
  previousHash: string | null;
  previousExpiresAt: number | null;
  /** A label for people ("" when none was given). */
  name: string;
  createdAt: number;
  revokedAt: number | null;
  /** After this time (ms) the key is refused with `api_key_expired`; null: never. */
  expiresAt: number | null;
  /** Model ids the key may call; null: every model. */
  allowedModels: string[] | null;
  /** Time of the newest logged request made with the key (written with the request-log batches). */
  lastUsedAt: number | null;
  /** The console user who created it; null for the CLI and round-1 keys. */
  createdBy: string | null;
  /** rpm, tpm, concurrency and budget of the key (docs/limits.md); `{}`: none. */
  limits: LimitSpec;
}

/** One upstream attempt of a request, kept in the log row. */
export interface UpstreamAttempt {
  provider: string;
  model: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}

export interface LogRow {
  requestId: string;
  orgId: string | null;
  /** The project of the key that made the request. */
  projectId: string | null;
  apiKeyId: string | null;
  modality: string;
  requestedModel: string | null;
  usedModel: string | null;
  usedProvider: string | null;
  status: number;
  errorCode: string | null;
  costMicros: Micros;
  /** Billed tokens, where the modality counts tokens (chat, embeddings); null otherwise. */
  promptTokens: number | null;
  completionTokens: number | null;
  /** True when the cost was counted by the gateway because the upstream reported no usage. */
  costEstimated: boolean;
  /** True when the org's own provider key was used: the cost is shown but not debited. */
  byok: boolean;
  durationMs: number;
  ttfbMs: number | null;
  prompt: string | null;
  attempts: UpstreamAttempt[];
  createdAt: number;
  /** Modality-specific data (JSON-serialisable). */
  extra: Record<string, unknown> | null;
}

export class DuplicateError extends Error {}

/**
 * A credit change the store refused before writing anything: a debit past what is free
 * (the balance less what requests in flight hold), or a credit past MAX_BALANCE_MICROS.
 * The management API answers it 400 `invalid_request` with this message.
 */
export class CreditRefusedError extends RangeError {}

/** The refusal of a credit of `amount` that would take a balance of `balance` past MAX_BALANCE_MICROS. */
export function creditRefused(amount: Micros, balance: Micros): CreditRefusedError {
  return new CreditRefusedError(`a balance may hold at most $${formatUsd(MAX_BALANCE_MICROS)}: the balance is $${formatUsd(balance)}, `
    + `so at most $${formatUsd(Math.max(MAX_BALANCE_MICROS - balance, 0))} can be added now (asked to add $${formatUsd(amount)})`);
}

/** The refusal of a debit of `amount` (positive) when `free` of the balance is not held; `held` is held by requests in flight. */
export function debitRefused(amount: Micros, free: Micros, held: Micros): CreditRefusedError {
  const why = held > 0 ? `: $${formatUsd(held)} of the balance is held by requests in flight, and at most $${formatUsd(Math.max(free, 0))} can be removed now` : '';
  return new CreditRefusedError(`the balance cannot go below zero${why} (asked to remove $${formatUsd(amount)})`);
}

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

/** A charge decided in memory, written with its request-log row (PostgreSQL). */
export interface Settlement {
  requestId: string;
  orgId: string;
  /** What is charged (already capped at the reservation). */
  cost: Micros;
  /** The instance whose balance slice pays it (postgres-slices.ts); absent: its reservation row does. */
  slice?: string;
}

export interface LedgerAudit {
  /** Σ credits (initial, added, removed). */
  credited: Micros;
  /** The stored balance (not less what is held). */
  balance: Micros;
  /** Held by reservations not yet settled (and, on SQLite, charges not yet written). */
  held: Micros;
  /** Σ ledger charges. */
  charged: Micros;
  /** Σ logged costs that were debited (not BYOK). */
  logged: Micros;
}
