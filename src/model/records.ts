import type { StoredBodies, Verdict } from './guardrails.js';
import type { CacheResult, CacheSetting } from './cache.js';
import type { LimitSpec } from './limits.js';
import type { TokenCounts } from './usage.js';

export type { TokenCounts };
import { formatUsd, MAX_BALANCE_MICROS, type Micros } from '../lib/money.js';

/*
 * The records the store keeps and hands out (orgs, keys, log rows, settlements) and its
 * errors. Apart from the Store interface (types.ts), so the sub-stores that use them do
 * not import the interface that lists them.
 */

export type Retention = 'standard' | 'none';

/** The ledger note of an org's first credits, when its creator gives none. */
export const INITIAL_CREDITS_NOTE = 'initial credits';

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
  /** The key's response-cache setting, over its project's (docs/cache.md); null or absent: the project's. */
  cache?: CacheSetting | null;
}

/** One upstream attempt of a request, kept in the log row. */
export interface UpstreamAttempt {
  provider: string;
  model: string;
  status: number | null;
  error: string | null;
  durationMs: number;
  /** The deployment (key) the attempt went to, when the gateway's key was used. */
  deployment?: string;
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
  /** The deployment (key name) that served it: gateway.yaml `providers.<id>.keys[].name`, `default` for a single api_key; null with BYOK or when none answered. */
  deployment?: string | null;
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
  /** The response cache's result (docs/cache.md); null or absent when it was off for the request. */
  cache?: CacheResult | null;
  /** A hit: how old the stored reply was (ms). */
  cacheAgeMs?: number | null;
  /** A hit: the original cost less what the hit was charged (micro-USD). */
  cacheSavedMicros?: Micros | null;
  /** The project's guardrail verdicts (docs/guardrails.md); null or absent: none ran. */
  guardrails?: Verdict[] | null;
  /** The request's bodies, when its project logs them: written to `request_bodies`, not to the log row. */
  bodies?: StoredBodies;
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


/** A role in an organization, in rising order of rights. */
export type OrgRole = 'owner' | 'admin' | 'member';
