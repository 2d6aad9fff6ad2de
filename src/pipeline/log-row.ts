import { elapsedMs, type Exchange } from './exchange.js';
import { boundedAttempts, clipText, MAX_LOGGED_MODEL_CHARS, MAX_LOGGED_PROMPT_CHARS } from './log-bounds.js';
import type { LogRow } from '../store/types.js';

/** The request-log row of an exchange that ended with `status` (written by src/pipeline/request-lifecycle.ts only). */
export function logRowOf(ex: Exchange, status: number): LogRow {
  // What the client chose is kept within bounds (log-bounds.ts): a refused request costs nothing, its row must not cost much.
  const prompt = ex.org?.retention === 'none' ? undefined : ex.prompt;
  const promptCut = prompt !== undefined && prompt.length > MAX_LOGGED_PROMPT_CHARS;
  return {
    requestId: ex.id, orgId: ex.org?.id ?? null, projectId: ex.apiKey?.projectId ?? null, apiKeyId: ex.apiKey?.id ?? null, modality: ex.modality,
    requestedModel: ex.requestedModel === undefined ? null : clipText(ex.requestedModel, MAX_LOGGED_MODEL_CHARS), usedModel: ex.route?.model.upstreamId ?? null,
    usedProvider: ex.route?.provider.id ?? null, deployment: ex.deployment ?? null, status, errorCode: ex.errorCode ?? null,
    costMicros: ex.costMicros, costEstimated: ex.costEstimated, byok: ex.byok, durationMs: elapsedMs(ex),
    promptTokens: ex.usage?.input ?? null, completionTokens: ex.usage?.output ?? null,
    // An org whose retention is `none` keeps no copy of what it sent: no prompt text in its log.
    ttfbMs: ex.ttfbMs ?? null, prompt: prompt === undefined ? null : clipText(prompt, MAX_LOGGED_PROMPT_CHARS), attempts: boundedAttempts(ex.attempts), createdAt: ex.startedAt,
    extra: promptCut ? { ...ex.extra, prompt_chars: prompt.length } : ex.extra ?? null,
    cache: ex.cache?.result ?? null, cacheAgeMs: ex.cache?.ageMs ?? null, cacheSavedMicros: ex.cache ? ex.cache.savedMicros : null,
    guardrails: ex.guardrails && ex.guardrails.length > 0 ? ex.guardrails : null,
    // Logged bodies (the project's body_logging) go to their own table with the row's batch; an org whose retention is `none` keeps none.
    ...(ex.bodies && ex.org && ex.org.retention !== 'none' ? { bodies: ex.bodies.stored(ex.id, ex.org.id, ex.startedAt) } : {}),
  };
}
