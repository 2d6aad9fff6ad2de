/**
 * The console's only way to the gateway: the management API under /api/v1 (same origin,
 * session cookie). Errors arrive in the gateway's standard body and become ApiError.
 */

import type { ApiRoutes, AuditItem, KeyListItem, LimitUsage, Limits, LogDetail, Member, Project } from './api-types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | undefined | null>;

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** Fired on window when a request finds the session gone (401), so the app shows the sign-in form. */
export const SIGNED_OUT_EVENT = 'tollgate:signed-out';

export async function api<T>(method: string, path: string, opts: { query?: Query; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const res = await fetch(withQuery(`/api/v1${path}`, opts.query), {
    method,
    credentials: 'same-origin',
    headers: opts.body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string; param?: string | null } } | null)?.error;
    const retry = Number(res.headers.get('retry-after'));
    const err = new ApiError(res.status, e?.code ?? 'http_error', e?.message ?? `HTTP ${res.status}`, e?.param ?? null, Number.isFinite(retry) && retry > 0 ? retry : null);
    if (res.status === 401 && path !== '/session') window.dispatchEvent(new Event(SIGNED_OUT_EVENT));
    throw err;
  }
  return body as T;
}

export const get = <T>(path: string, query?: Query, signal?: AbortSignal) => api<T>('GET', path, { query, signal });
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, { body });
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, { body });
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, { body });
export const del = <T>(path: string) => api<T>('DELETE', path);

/*
 * The API's shapes come from api-types.ts, generated from the gateway's route schemas
 * (`npm run gen:api`): the names below are the console's for them. Only the plugins'
 * routes (music, models) are described by hand.
 */
export type {
  AuditItem, CacheSetting, CreatedWebhook, Credit, Invitation, KeyDetail, LimitUsage, Limits, LogDetail, LogItem, Member, MemberAdded,
  Me, MeSelf, Org, Percentiles, Project, ProjectDetail, ProviderKey, ReloadResult, Totals, Bucket, Webhook, WebhookDelivery,
} from './api-types';

/** What a route answers (its 2xx body), by its key as the gateway writes it: `'GET /api/v1/orgs/:org/usage'`. */
export type Answer<K extends keyof ApiRoutes> = ApiRoutes[K]['response'];

export type Role = Member['role'];
export type BudgetPeriod = NonNullable<Limits['budget_period']>;
export type LimitMode = NonNullable<Limits['mode']>;
export type WindowUsage = NonNullable<LimitUsage['rpm']>;
/** GET /orgs/{org}/cache: hit rate and money saved per project and UTC day. */
export type CacheStats = Answer<'GET /api/v1/orgs/:org/cache'>;
export type BodyLogging = Project['body_logging'];
export type GuardrailVerdict = LogDetail['guardrails'][number];
export type LogBodies = NonNullable<LogDetail['bodies']>;
export type UnsupportedParams = NonNullable<Project['unsupported_params']>;
/** A key as the lists show it: `usage` only on active keys with limits. */
export type ApiKey = KeyListItem;
/** GET /api/v1/deployments (operators): each provider key and its health on this instance. */
export type Deployments = Answer<'GET /api/v1/deployments'>;
export type Usage = Answer<'GET /api/v1/orgs/:org/usage'>;
export type Overview = Answer<'GET /api/v1/orgs/:org/overview'>;
export type Latency = Answer<'GET /api/v1/orgs/:org/latency'>;
export type Credits = Answer<'GET /api/v1/orgs/:org/credits'>;
export type AuditActor = AuditItem['actor'];
export type WebhookEvent = Answer<'GET /api/v1/orgs/:org/webhooks'>['data'][number]['events'][number];

/* The plugins' routes (music, models). */
export interface Track {
  id: string; model?: string; prompt: string; created: number; audio: { mime_type: string; storage: string; url?: string } | null;
  usage: { cost_usd: number }; metadata: { used_model: string; used_provider: string; response_format: string }; expired: boolean; error: boolean;
}
export interface ModelRecord {
  id: string; name: string; modality: string; family: string; context_length: number; pricing: Record<string, string>;
  providers: Array<{ providerId: string }>; deprecated_at: string | null; deactivated_at: string | null;
}
export interface ListOf<T> { data: T[] }
