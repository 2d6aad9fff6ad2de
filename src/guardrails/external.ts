import { webhookUrlProblem } from '../lib/ssrf.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import { fillPath, type UpstreamClient } from '../pipeline/upstream.js';
import type { ExternalVerdict, RequestMeta } from './engine.js';
import type { GuardrailStage, ModerationGuardrail, WebhookGuardrail } from '../model/guardrails.js';

const DEFAULT_WEBHOOK_TIMEOUT_MS = 2000;
export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';
/** The most of a webhook's answer read (a verdict is small). */
const MAX_VERDICT_BYTES = 4 * 1024 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The request's signal and the guardrail's timeout, whichever comes first. */
function within(signal: AbortSignal, ms: number): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(ms)]);
}

/**
 * Asks an external moderation service (docs/guardrails.md, "webhook"): POSTs the texts
 * and who asked; the answer is `{"action": "allow" | "block" | "rewrite", "categories"?, "texts"?}`.
 * A non-2xx status, a timeout or an answer of another shape throws: the caller applies `on_error`.
 */
export async function callWebhook(
  g: WebhookGuardrail, stage: GuardrailStage, texts: string[], meta: RequestMeta, signal: AbortSignal, allowPrivate: boolean,
): Promise<ExternalVerdict> {
  // Checked at each call as the alerts' webhooks are (a name may come to point inside): SSRF.
  const problem = await webhookUrlProblem(g.url, allowPrivate);
  if (problem) throw new Error(`webhook url ${problem}`);
  const res = await fetch(g.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': 'tollgate-guardrail' },
    body: JSON.stringify({ stage, texts, ...meta }),
    signal: within(signal, g.timeout_ms ?? DEFAULT_WEBHOOK_TIMEOUT_MS),
    redirect: 'error',
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`webhook status ${res.status}`);
  if (text.length > MAX_VERDICT_BYTES) throw new Error('webhook answer too large');
  const body: unknown = JSON.parse(text);
  if (!isObject(body) || (body.action !== 'allow' && body.action !== 'block' && body.action !== 'rewrite')) throw new Error('webhook answer has no action');
  const verdict: ExternalVerdict = { action: body.action, categories: strings(body.categories) };
  if (body.action === 'rewrite') {
    const rewritten = strings(body.texts);
    if (!Array.isArray(body.texts) || rewritten.length !== texts.length) throw new Error('a rewrite must give one text per text sent');
    verdict.texts = rewritten;
  }
  return verdict;
}

/**
 * The gateway's own moderation model (a model of the `moderation` modality in the
 * catalogue, called with the provider's key): blocks when it flags one of the chosen
 * categories (any, when none are chosen). Not billed to the org.
 */
export async function callModeration(catalog: ProviderCatalog, upstream: UpstreamClient, g: ModerationGuardrail, texts: string[], signal: AbortSignal): Promise<ExternalVerdict> {
  const route = catalog.routesForModality(g.model ?? DEFAULT_MODERATION_MODEL, 'moderation')[0];
  if (!route) throw new Error(`no moderation model ${g.model ?? DEFAULT_MODERATION_MODEL}`);
  const res = await upstream.send(route, {
    path: fillPath(route.endpoint.path, { model: route.model.upstreamId }),
    body: JSON.stringify({ model: route.model.upstreamId, input: texts.filter((t) => t.length > 0) }),
    contentType: 'application/json',
  }, route.provider.apiKey, signal, { timeoutMs: route.endpoint.timeoutMs });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`moderation status ${res.statusCode}`);
  const body: unknown = JSON.parse(text);
  if (!isObject(body) || !Array.isArray(body.results)) throw new Error('moderation answer has no results');
  const flagged = new Set<string>();
  for (const r of body.results) {
    if (!isObject(r) || !isObject(r.categories)) continue;
    for (const [category, on] of Object.entries(r.categories)) if (on === true) flagged.add(category);
  }
  const hits = g.categories ? [...flagged].filter((c) => g.categories?.includes(c)) : [...flagged];
  return { action: hits.length > 0 ? 'block' : 'allow', categories: hits };
}
