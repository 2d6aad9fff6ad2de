import type { Micros } from '../lib/money.js';

/** Where a generated file's bytes live (spec §3): hosted in object storage, only in the reply, or never kept. */
export type MediaStorage = 's3' | 'inline' | 'none';

/**
 * One generation of stored-media modality (music), written synchronously when its reply
 * is sent, so its content and history entry exist as soon as the POST has returned.
 * Failed generations are recorded too (`error: true`, no bytes) for the history.
 */
export interface MediaRecord {
  /** The log row id (`log_…`); `requestId` is the `req_…` id. Both resolve a record. */
  id: string;
  requestId: string;
  orgId: string;
  modality: string;
  model: string;
  usedModel: string | null;
  usedProvider: string | null;
  prompt: string | null;
  /** Text returned with the media (lyrics and structure markers for music). */
  text: string | null;
  storage: MediaStorage;
  objectKey: string | null;
  bytes: number;
  mimeType: string;
  costMicros: Micros;
  error: boolean;
  errorCode: string | null;
  createdAt: number;
  /** When hosted bytes are due for deletion; null when nothing is hosted. */
  expiresAt: number | null;
  /** When the retention sweep deleted the hosted bytes. */
  cleanedAt: number | null;
  meta: Record<string, unknown> | null;
}

export interface MediaStore {
  put(record: MediaRecord): Promise<void>;
  /** By log id or request id. */
  get(id: string): Promise<MediaRecord | undefined>;
  /** The org's most recent records of a modality, newest first. */
  list(orgId: string, modality: string, limit: number): Promise<MediaRecord[]>;
  /** Hosted records whose expiry has passed, whose bytes are not yet deleted and that no sweep has a live claim on, oldest first (of one modality, when given). */
  listExpired(now: number, limit: number, modality?: string): Promise<MediaRecord[]>;
  /**
   * Claims an expired record for deletion until `until` (one statement: UPDATE … WHERE
   * cleaned_at IS NULL AND no live claim … RETURNING). Undefined when it is cleaned or
   * another sweep holds it: then its object is not this caller's to delete.
   */
  claim(id: string, now: number, until: number): Promise<MediaRecord | undefined>;
  /** Gives a claim up (its delete failed): the next sweep tries again. */
  unclaim(id: string): Promise<void>;
  /** The object is deleted: the record is cleaned, its claim done. */
  markCleaned(id: string, at: number): Promise<void>;
  /** Log-text retention: blanks prompt and returned text of records and request logs created before `before`. */
  clearText(before: number): Promise<number>;
}

/** Named leases, so that one instance among many sharing a database runs a periodic task. */
export interface LeaseStore {
  /** Takes or renews the lease for `ttlMs` if it is free, expired or already ours. */
  tryAcquire(name: string, holder: string, ttlMs: number, now: number): Promise<boolean>;
  release(name: string, holder: string): Promise<void>;
}

/** Column order shared by both drivers. */
export const MEDIA_COLUMNS = [
  'id', 'request_id', 'org_id', 'modality', 'model', 'used_model', 'used_provider', 'prompt', 'text', 'storage', 'object_key',
  'bytes', 'mime_type', 'cost_micros', 'error', 'error_code', 'created_at', 'expires_at', 'cleaned_at', 'meta',
] as const;

export interface MediaRow {
  id: string; request_id: string; org_id: string; modality: string; model: string; used_model: string | null;
  used_provider: string | null; prompt: string | null; text: string | null; storage: MediaStorage; object_key: string | null;
  bytes: number; mime_type: string; cost_micros: number; error: boolean | number; error_code: string | null; created_at: number;
  expires_at: number | null; cleaned_at: number | null; meta: string | Record<string, unknown> | null;
}

export function toMediaRow(r: MediaRecord): Omit<MediaRow, 'meta' | 'error'> & { meta: string | null; error: boolean } {
  return {
    id: r.id, request_id: r.requestId, org_id: r.orgId, modality: r.modality, model: r.model, used_model: r.usedModel,
    used_provider: r.usedProvider, prompt: r.prompt, text: r.text, storage: r.storage, object_key: r.objectKey, bytes: r.bytes,
    mime_type: r.mimeType, cost_micros: r.costMicros, error: r.error, error_code: r.errorCode, created_at: r.createdAt,
    expires_at: r.expiresAt, cleaned_at: r.cleanedAt, meta: r.meta ? JSON.stringify(r.meta) : null,
  };
}

export function fromMediaRow(r: MediaRow): MediaRecord {
  return {
    id: r.id, requestId: r.request_id, orgId: r.org_id, modality: r.modality, model: r.model, usedModel: r.used_model,
    usedProvider: r.used_provider, prompt: r.prompt, text: r.text, storage: r.storage, objectKey: r.object_key, bytes: r.bytes,
    mimeType: r.mime_type, costMicros: r.cost_micros, error: r.error === true || r.error === 1, errorCode: r.error_code,
    createdAt: r.created_at, expiresAt: r.expires_at, cleanedAt: r.cleaned_at,
    meta: typeof r.meta === 'string' ? (JSON.parse(r.meta) as Record<string, unknown>) : r.meta,
  };
}

/** The log id of a request id: both name the same request. */
export function logIdOf(requestId: string): string {
  return `log_${requestId.slice(4)}`;
}
