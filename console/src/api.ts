/**
 * The console's only way to the gateway: the management API under /api/v1 (same origin,
 * session cookie). Errors arrive in the gateway's standard body and become ApiError.
 */

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

/* The API's shapes (docs/management.md), as far as the console reads them. */

export type Role = 'owner' | 'admin' | 'member';
export interface Me { id: string; email: string; operator: boolean; orgs: Array<{ id: string; name: string; role: Role }> }
/** GET /api/v1/me: has_password is false for a user created by single sign-on. */
export interface MeSelf extends Me { has_password: boolean }
export interface Org { id: string; name: string; balance_usd: number; retention: string; role: Role | 'operator' }
export type BudgetPeriod = 'day' | 'month' | 'total';
/** The limits of a key or project (docs/limits.md): null where that kind is not limited. */
export type LimitMode = 'exact' | 'lease';
export interface Limits { rpm: number | null; tpm: number | null; max_concurrent: number | null; budget_usd: number | null; budget_period: BudgetPeriod | null; mode?: LimitMode | null }
export interface WindowUsage { limit: number; used: number; remaining: number; resets_at: string | null }
/** What the limits count now (GET of one key or project); null when the limits store does not answer. */
export interface LimitUsage {
  at: string; rpm: WindowUsage | null; tpm: WindowUsage | null; concurrency: { limit: number; used: number; remaining: number } | null;
  budget: { limit_usd: number; period: BudgetPeriod; spent_usd: number; held_usd: number; remaining_usd: number; period_start: string | null; resets_at: string | null } | null;
}
export interface Project {
  id: string; name: string; created_at: string; live_keys: number; limits: Limits;
  /** Chat output bound for requests that name none (docs/chat.md); null: gateway.yaml's, if any. */
  default_max_tokens: number | null;
  /** Chat policy for parameters a model cannot take (docs/chat.md); null: gateway.yaml's, else the provider files'. */
  unsupported_params: UnsupportedParams | null;
  /** The response cache of the project's keys (docs/cache.md); null: off unless a key turns it on. */
  cache: CacheSetting | null;
  /** The project's guardrails, in order (docs/guardrails.md). */
  guardrails: Array<Record<string, unknown>>;
  body_logging: BodyLogging;
}
/** A project's or key's response-cache setting (docs/cache.md): a key's fields win over its project's. */
export interface CacheSetting { mode?: 'off' | 'exact' | 'semantic'; ttl_s?: number; scope?: 'org' | 'project'; hit_price?: number; max_temperature?: number; cache_all?: boolean; threshold?: number }
/** GET /orgs/{org}/cache: hit rate and money saved per project and UTC day. */
export interface CacheStats {
  from: string; to: string; saved_usd: number;
  data: Array<{ day: string; project_id: string | null; project_name: string | null; hits: number; misses: number; bypasses: number; hit_rate: number; saved_usd: number; charged_usd: number }>;
}
export interface BodyLogging { mode: 'off' | 'on' | 'redacted'; retention_days: number; max_bytes: number }
export interface GuardrailVerdict { guardrail: string; stage: string; action: string; categories: string[]; count: number }
export interface LogBodies { request: string | null; response: string | null; truncated: boolean; expires_at: string }
export type UnsupportedParams = 'error' | 'drop' | 'translate';
export interface ProjectDetail extends Project { usage: LimitUsage | null }
export interface ApiKey {
  id: string; prefix: string; name: string; project_id: string; project_name: string; status: 'active' | 'revoked' | 'expired';
  created_at: string; expires_at: string | null; last_used_at: string | null; revoked_at: string | null; allowed_models: string[] | null;
  limits: Limits;
  /** The key's response cache, over its project's; null: the project's. */
  cache: CacheSetting | null;
  /** In the key lists: the current counts of an active key with limits (null: the limits store did not answer); absent otherwise. */
  usage?: LimitUsage | null;
}
export interface LogItem {
  id: string; created_at: string; modality: string; project_id: string | null; project_name: string | null; key_id: string | null;
  key_prefix: string | null; key_name: string | null; model: string | null; used_model: string | null; provider: string | null; deployment: string | null;
  status: number; error_code: string | null; prompt_tokens: number | null; completion_tokens: number | null; cost_usd: number;
  cost_estimated: boolean; byok: boolean; duration_ms: number; ttfb_ms: number | null;
  /** The response cache's result (docs/cache.md); null when it was off. */
  cache: 'hit' | 'miss' | 'bypass' | null; cache_age_ms: number | null; saved_usd: number | null;
}
export interface LogDetail extends LogItem {
  prompt: string | null; prompt_retained: boolean;
  attempts: Array<{ provider: string; model: string; deployment: string | null; status: number | null; error: string | null; duration_ms: number }>;
  extra: Record<string, unknown> | null;
  guardrails: GuardrailVerdict[];
  bodies: LogBodies | null;
}
export interface ReloadResult { result: 'ok' | 'error'; trigger: string; at: string; restart_needed: string[]; problems: string[] }
/** GET /api/v1/deployments (operators): each provider key and its health on this instance. */
export interface Deployments {
  data: Array<{
    provider: string; name: string; base_url: string; weight: number; rpm: number | null; tpm: number | null; state: string; reason: string | null;
    cooling_until: string | null; in_flight: number; latency_ms: number | null;
  }>;
  strategy: string; cooldown_ms: number; groups: Array<{ name: string; targets: string[]; fallbacks: string[]; strategy: string }>; last_reload: ReloadResult | null;
}
export interface Sums { requests: number; errors: number; cost_usd: number; prompt_tokens: number; completion_tokens: number }
export interface Totals extends Sums { error_rate: number }
export interface Bucket extends Sums { day?: string; model?: string | null; project_id?: string | null; project_name?: string | null; key_id?: string | null; key_prefix?: string | null; key_name?: string | null; user_id?: string | null; user_email?: string | null }
export interface Usage { from: string; to: string; group_by: string[]; totals: Totals; data: Bucket[] }
export interface Overview {
  balance_usd: number; last_7_days: Totals; last_30_days: Totals;
  top_models: Array<{ model: string | null; requests: number; cost_usd: number }>;
  top_projects: Array<{ project_id: string | null; project_name: string | null; requests: number; cost_usd: number }>;
  daily: Array<{ day: string; requests: number; errors: number; cost_usd: number }>;
  /** The 30 days' errors by kind: the gateway's limit refusals are deliberate, not failures. */
  errors_30_days: { limit_refusals: number; upstream: number; other: number; failure_rate: number };
}
export interface Percentiles { p50: number | null; p95: number | null; count: number }
export interface Latency { from: string; to: string; latency: Percentiles; ttfb: Percentiles; sampled: boolean; data: Array<{ day: string; latency: Percentiles; ttfb: Percentiles }> }
export interface Credit { id: number; amount_usd: number; note: string | null; created_at: string; created_by: { id: string; email: string } | null }
export interface Credits { balance_usd: number; data: Credit[]; next_cursor: string | null }
export interface ProviderKey { provider: string; masked: string; updated_at: string; updated_by: string | null }
export interface Member { user_id: string; email: string; role: Role; created_at: string; active: boolean }
export interface Invitation { id: string; org_id: string; org_name: string; email: string; role: Role; status: string; created_at: string; expires_at: string }
/** What adding a member answers: the member (an operator's direct add) or the invitation sent (an owner's). */
export interface MemberAdded { member: Member | null; invitation: Invitation | null }
export interface Track {
  id: string; model?: string; prompt: string; created: number; audio: { mime_type: string; storage: string; url?: string } | null;
  usage: { cost_usd: number }; metadata: { used_model: string; used_provider: string; response_format: string }; expired: boolean; error: boolean;
}
export interface ModelRecord {
  id: string; name: string; modality: string; family: string; context_length: number; pricing: Record<string, string>;
  providers: Array<{ providerId: string }>; deprecated_at: string | null; deactivated_at: string | null;
}
export interface AuditActor { type: 'user' | 'token' | 'cli' | 'anonymous'; user_id: string | null; email: string | null; token_id: string | null }
export interface AuditItem {
  id: string; at: string; org_id: string | null; action: string; target_type: string | null; target_id: string | null; actor: AuditActor;
  ip: string | null; user_agent: string | null; before: Record<string, unknown> | null; after: Record<string, unknown> | null;
}
export interface ListOf<T> { data: T[] }
export type WebhookEvent = 'budget.threshold' | 'balance.below';
export interface Webhook { id: string; url: string; events: WebhookEvent[]; slack: boolean; created_at: string; created_by: string | null }
/** What creating a webhook answers: the webhook and its signing secret, shown this once. */
export interface CreatedWebhook extends Webhook { secret: string }
export interface WebhookDelivery {
  id: string; event_id: string; type: string; status: 'pending' | 'delivered' | 'failed'; attempts: number; next_attempt_at: string | null;
  last_status: number | null; last_error: string | null; created_at: string; delivered_at: string | null;
}
