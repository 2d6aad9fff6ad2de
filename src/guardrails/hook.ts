import type { CoreStageHook, RequestView } from '../pipeline/hooks.js';
import type { Exchange } from '../pipeline/exchange.js';
import type { ModelRequest } from '../pipeline/plugin.js';
import type { Project } from '../store/tenancy.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { UpstreamClient } from '../pipeline/upstream.js';
import { BodyCapture } from './bodies.js';
import { guardRequest, type CompiledGuardrail, type GuardrailServices, type RequestMeta } from './engine.js';
import { callModeration, callWebhook } from './external.js';
import { MaskBook } from './masker.js';
import { compileMatcher, type Matcher } from './matchers.js';
import { detectPii } from './pii.js';
import { replyFilter } from './reply.js';
import { nameOf, PII_ENTITIES, stagesOf, type GuardrailSpec, type PiiEntity, type Verdict } from '../model/guardrails.js';

export interface GuardrailDeps {
  catalog: ProviderCatalog;
  upstream: UpstreamClient;
  /** `webhooks.allow_private_urls`: a webhook guardrail may call private and loopback addresses. */
  allowPrivateUrls: boolean;
  /** `tollgate_guardrail_verdicts_total`; absent when metrics are off. */
  onVerdict?(guardrail: string, action: string): void;
}

/** The matcher `body_logging: redacted` uses: the entities of the project's pii guardrails, every entity when it has none. */
function redactMatcher(specs: readonly GuardrailSpec[]): Matcher {
  const pii = specs.filter((g) => g.type === 'pii');
  const entities = new Set<PiiEntity>(pii.length === 0 ? PII_ENTITIES : pii.flatMap((g) => (g.type === 'pii' ? g.entities ?? PII_ENTITIES : [])));
  return (text) => detectPii(text, entities);
}

/**
 * The `pre-upstream` hook of the projects' guardrails and body logging
 * (docs/guardrails.md). A project with neither costs one property read. Runs the
 * request-side guardrails over the request's text slots (masking in place, or throwing
 * `guardrail_blocked` before any upstream call: nothing is charged), scrubs what the
 * gateway keeps (the log's prompt) of every masked value, and leaves a ReplyFilter on
 * the exchange for the reply side.
 */
export function guardrailsHook(deps: GuardrailDeps): CoreStageHook {
  // Compiled once per project config object (the auth cache holds the project until its TTL or an invalidation).
  const compiled = new WeakMap<readonly GuardrailSpec[], CompiledGuardrail[]>();
  const compile = (specs: readonly GuardrailSpec[]): CompiledGuardrail[] => {
    let list = compiled.get(specs);
    if (!list) compiled.set(specs, (list = specs.map((spec) => ({ spec, name: nameOf(spec), matcher: compileMatcher(spec) }))));
    return list;
  };
  const svc: GuardrailServices = {
    webhook: (g, stage, texts, meta, signal) => callWebhook(g, stage, texts, meta, signal, deps.allowPrivateUrls),
    moderate: (g, texts, signal) => callModeration(deps.catalog, deps.upstream, g, texts, signal),
    onVerdict: (v) => deps.onVerdict?.(v.guardrail, v.action),
  };
  // A project with neither (most) answers at once: nothing to await.
  return (ex, request, view) => {
    const project = ex.project;
    if (!project || !request || !view) return;
    if (project.guardrails.length === 0 && project.bodyLogging.mode === 'off') return;
    return guard(ex, project, request, view);
  };
  async function guard(ex: Exchange, project: Project, request: ModelRequest, view: RequestView): Promise<void> {
    const { guardrails: specs, bodyLogging } = project;
    const list = compile(specs);
    const book = new MaskBook();
    const verdicts: Verdict[] = [];
    if (specs.length > 0) ex.guardrails = verdicts;
    const capture = bodyLogging.mode === 'off' ? undefined : new BodyCapture(bodyLogging, book, bodyLogging.mode === 'redacted' ? redactMatcher(specs) : undefined);
    ex.bodies = capture;
    const meta: RequestMeta = { request_id: ex.id, org_id: ex.org?.id ?? null, project_id: project.id, model: request.model, modality: ex.modality };
    const pre = list.filter((g) => stagesOf(g.spec).includes('pre-upstream'));
    const post = list.filter((g) => stagesOf(g.spec).includes('post-upstream'));
    try {
      if (pre.length > 0) await guardRequest(pre, view.texts(), book, svc, meta, verdicts, ex.abort.signal);
    } finally {
      // Masked or refused, no matched value stays in what the gateway keeps: the log's prompt, traces, the logged body.
      if (book.size > 0 && request.prompt !== undefined) request.prompt = book.scrub(request.prompt);
      if (book.size > 0 && ex.prompt !== undefined) ex.prompt = book.scrub(ex.prompt);
      capture?.setRequest(JSON.stringify(view.body()) ?? '');
    }
    if (post.length > 0 || book.restores || capture) {
      ex.replyFilter = replyFilter({ list: post, book, svc, meta, verdicts, signal: ex.abort.signal, capture });
    }
  }
}
