import { CACHE_SETTING_SCHEMA } from '../model/cache.js';
import type { AuditRow } from '../model/audit.js';
import type { StoredBodies } from '../model/guardrails.js';
import { BODY_LOGGING_VIEW, GUARDRAILS_VIEW, VERDICTS_VIEW } from '../guardrails/schema.js';
import { microsToUsd } from '../lib/money.js';
import { UNSUPPORTED_PARAMS_POLICIES } from '../providers/types.js';
import type { Member, MgmtToken, OrgRole, User } from '../store/accounts.js';
import type { LogListItem } from '../store/log-query.js';
import type { ProviderKeyInfo } from '../store/provider-key-store.js';
import type { CreditEntry, KeyListItem, ProjectSummary } from '../store/tenancy.js';
import type { LogRow, Org } from '../store/types.js';
import { LIMITS, limitsView } from './limits-api.js';
import { bool, CALLER_ROLE, EMAIL, int, maybe, obj, ROLE, str, time, usd, type JsonSchema } from './schemas.js';

/*
 * What the management API returns, one function and one schema per resource, side by
 * side so they cannot disagree: ids as the lists return them, names beside ids, times
 * as ISO 8601 strings, money as USD numbers converted once from exact micro-USD.
 */

/** A project's or key's `cache` setting, in requests and views alike; null clears it. */
export const CACHE_SETTING: JsonSchema = { ...(CACHE_SETTING_SCHEMA as unknown as JsonSchema), title: 'CacheSetting' };

export const iso = (ms: number): string => new Date(ms).toISOString();
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

export const ORG = obj({
  id: str('org_…'), name: str(), balance_usd: usd('Credit balance'), retention: str('Media and prompt retention', { enum: ['standard', 'none'] }),
  created_at: time(), role: CALLER_ROLE,
}, { title: 'Org' });
export const orgView = (org: Org, role: OrgRole | 'operator') => ({
  id: org.id, name: org.name, balance_usd: microsToUsd(org.balanceMicros), retention: org.retention, created_at: iso(org.createdAt), role,
});

export const PROJECT = obj({
  id: str('prj_…'), name: str(), created_at: time(), live_keys: int('Keys neither revoked nor expired'), limits: LIMITS,
  default_max_tokens: maybe(int('Chat output bound sent and reserved for when a request names none (docs/chat.md); null: gateway.yaml\'s settings.chat.default_max_tokens, if any')),
  unsupported_params: maybe(str('Chat unsupported_params policy of the project\'s keys (docs/chat.md); null: gateway.yaml\'s settings.chat.unsupported_params, else the provider files\'', {
    enum: [...UNSUPPORTED_PARAMS_POLICIES, null],
  })),
  cache: CACHE_SETTING,
  guardrails: GUARDRAILS_VIEW,
  body_logging: BODY_LOGGING_VIEW,
}, { title: 'Project' });
export const projectView = (p: ProjectSummary) => ({
  id: p.id, name: p.name, created_at: iso(p.createdAt), live_keys: p.liveKeys, limits: limitsView(p.limits), default_max_tokens: p.defaultMaxTokens,
  unsupported_params: p.unsupportedParams, cache: p.cache ?? null, guardrails: p.guardrails, body_logging: p.bodyLogging,
});

export const API_KEY = obj({
  id: str('key_…'), prefix: str('The start of the key (tg_ + 8 characters); the key itself is shown only when created'),
  name: str(), project_id: str(), project_name: str(), status: str('', { enum: ['active', 'revoked', 'expired'] }),
  created_at: time(), expires_at: maybe(time()), last_used_at: maybe(time('Newest logged request made with the key')),
  revoked_at: maybe(time()), allowed_models: maybe({ type: 'array', items: str(), description: 'Model ids the key may call; null: all' }),
  limits: LIMITS, cache: CACHE_SETTING,
}, { title: 'ApiKey' });
export function keyView(k: KeyListItem, now: number) {
  const status = k.revokedAt !== null ? 'revoked' : k.expiresAt !== null && k.expiresAt <= now ? 'expired' : 'active';
  return {
    id: k.id, prefix: k.prefix, name: k.name, project_id: k.projectId, project_name: k.projectName, status,
    created_at: iso(k.createdAt), expires_at: isoOrNull(k.expiresAt), last_used_at: isoOrNull(k.lastUsedAt),
    revoked_at: isoOrNull(k.revokedAt), allowed_models: k.allowedModels, limits: limitsView(k.limits), cache: k.cache ?? null,
  };
}
export const CREATED_KEY: JsonSchema = { ...API_KEY, title: 'CreatedKey', properties: { ...(API_KEY.properties as object), key: str('The API key: shown this once, stored only hashed') }, required: [...(API_KEY.required as string[]), 'key'] };

const LOG_ITEM_FIELDS = {
  id: str('req_… (the x-request-id of the request)'), created_at: time(), modality: str(),
  project_id: maybe(str()), project_name: maybe(str()), key_id: maybe(str()), key_prefix: maybe(str()), key_name: maybe(str()),
  model: maybe(str('The model id as requested')), used_model: maybe(str()), provider: maybe(str()),
  deployment: maybe(str('The provider key (gateway.yaml providers.<id>.keys[].name; default for a single api_key) that served it; null with BYOK or when no upstream answered')),
  status: int('HTTP status'), error_code: maybe(str()), prompt_tokens: maybe(int()), completion_tokens: maybe(int()),
  cost_usd: usd('Cost charged (or, with byok, computed and not debited)'), cost_estimated: bool(), byok: bool(),
  duration_ms: int(), ttfb_ms: maybe(int()),
  cache: maybe(str('Response cache result (docs/cache.md); null: the cache was off for the request', { enum: ['hit', 'miss', 'bypass', null] })),
  cache_age_ms: maybe(int('A hit: age of the stored reply')),
  saved_usd: maybe(usd('A hit: the original cost less what the hit was charged')),
};
export const LOG_ITEM = obj(LOG_ITEM_FIELDS, { title: 'LogItem' });

type LogBase = Omit<LogRow, 'prompt' | 'attempts' | 'extra'> & { keyPrefix: string | null; keyName?: string | null; projectName: string | null };
export const logItemView = (r: LogBase) => ({
  id: r.requestId, created_at: iso(r.createdAt), modality: r.modality, project_id: r.projectId, project_name: r.projectName,
  key_id: r.apiKeyId, key_prefix: r.keyPrefix, key_name: r.keyName ?? null, model: r.requestedModel, used_model: r.usedModel,
  provider: r.usedProvider, deployment: r.deployment ?? null, status: r.status, error_code: r.errorCode, prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens,
  cost_usd: microsToUsd(r.costMicros), cost_estimated: r.costEstimated, byok: r.byok, duration_ms: r.durationMs, ttfb_ms: r.ttfbMs,
  cache: r.cache ?? null, cache_age_ms: r.cacheAgeMs ?? null, saved_usd: r.cacheSavedMicros == null ? null : microsToUsd(r.cacheSavedMicros),
});
export const logListItemView = (r: LogListItem) => logItemView(r);

export const LOG_DETAIL = obj({
  ...LOG_ITEM_FIELDS,
  prompt: maybe(str('The prompt text; null when the org\'s retention keeps none, or once log-text retention cleared it')),
  prompt_retained: bool('False when the org\'s retention (`none`) keeps no prompt text'),
  attempts: { type: 'array', items: obj({ provider: str(), model: str(), deployment: maybe(str()), status: maybe(int()), error: maybe(str()), duration_ms: int() }) },
  extra: maybe({ type: 'object', additionalProperties: true, description: 'Modality-specific data (token details, storage, uncharged amounts)' }),
  guardrails: VERDICTS_VIEW,
  bodies: maybe(obj({
    request: maybe(str('The request body as the upstream got it (masked values as their placeholders; redacted in `redacted` mode)')),
    response: maybe(str('The reply as the upstream sent it (a stream\'s frames assembled)')),
    truncated: bool('Cut at the project\'s body_logging.max_bytes'),
    expires_at: time('When the retention sweep deletes them'),
  }, { description: 'The logged bodies (the project\'s body_logging); null when none were logged or the retention deleted them' })),
}, { title: 'LogDetail' });
export function logDetailView(r: LogRow & { keyPrefix: string | null; projectName: string | null }, org: Org, bodies: StoredBodies | undefined) {
  const retained = org.retention === 'standard';
  return {
    ...logItemView(r), prompt: retained ? r.prompt : null, prompt_retained: retained,
    attempts: r.attempts.map((a) => ({ provider: a.provider, model: a.model, deployment: a.deployment ?? null, status: a.status, error: a.error, duration_ms: a.durationMs })),
    extra: r.extra,
    guardrails: r.guardrails ?? [],
    bodies: retained && bodies ? { request: bodies.request, response: bodies.response, truncated: bodies.truncated, expires_at: iso(bodies.expiresAt) } : null,
  };
}

export const CREDIT = obj({
  id: int(), amount_usd: usd('Credits added (negative: removed)'), note: maybe(str()), created_at: time(),
  created_by: maybe(obj({ id: str(), email: str() }, { description: 'The console user; null for the CLI' })),
}, { title: 'Credit' });
export const creditView = (c: CreditEntry) => ({ id: c.id, amount_usd: microsToUsd(c.amountMicros), note: c.note, created_at: iso(c.createdAt), created_by: c.createdBy });

export const PROVIDER_KEY = obj({ provider: str(), masked: str('The key as shown: its start and end only'), updated_at: time(), updated_by: maybe(str('User id; null for the CLI')) }, { title: 'ProviderKey' });
export const providerKeyView = (k: ProviderKeyInfo) => ({ provider: k.providerId, masked: k.masked, updated_at: iso(k.updatedAt), updated_by: k.updatedBy });

export const MEMBER = obj({ user_id: str('usr_…'), email: EMAIL, role: ROLE, created_at: time(), active: bool('False while the user is deactivated') }, { title: 'Member' });
export const memberView = (m: Member) => ({ user_id: m.userId, email: m.email, role: m.role, created_at: iso(m.createdAt), active: m.active });

export const TOKEN = obj({ id: str('tok_…'), name: str(), prefix: str('tgm_ + 8 characters'), created_at: time(), last_used_at: maybe(time()), revoked_at: maybe(time()) }, { title: 'Token' });
export const tokenView = (t: MgmtToken) => ({
  id: t.id, name: t.name, prefix: t.prefix, created_at: iso(t.createdAt), last_used_at: isoOrNull(t.lastUsedAt), revoked_at: isoOrNull(t.revokedAt),
});

export const ME = obj({
  id: str('usr_…'), email: EMAIL, operator: bool('An operator of this instance: every org, org creation, credits'), created_at: time(),
  orgs: { type: 'array', items: obj({ id: str(), name: str(), role: ROLE }) },
}, { title: 'Me' });
/** GET /api/v1/me: ME and whether the user has a password to change (users created by single sign-on have none). */
export const ME_SELF = { ...ME, title: 'MeSelf', properties: { ...(ME.properties as object), has_password: bool('False for a user created by single sign-on: no password to change') }, required: [...(ME.required as string[]), 'has_password'] };
export const meView = (u: User, orgs: Array<{ orgId: string; orgName: string; role: OrgRole }>) => ({
  id: u.id, email: u.email, operator: u.operator, created_at: iso(u.createdAt), orgs: orgs.map((o) => ({ id: o.orgId, name: o.orgName, role: o.role })),
});

/** An audit-log row as the API and `gateway audit --format jsonl` show it. */
export const auditView = (r: AuditRow) => ({
  id: r.id, at: new Date(r.at).toISOString(), org_id: r.orgId, action: r.action, target_type: r.targetType, target_id: r.targetId,
  actor: { type: r.actor.type, user_id: r.actor.userId, email: r.actor.email, token_id: r.actor.tokenId },
  ip: r.ip, user_agent: r.userAgent, before: r.before, after: r.after,
});
