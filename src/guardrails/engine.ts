import { GatewayError } from '../lib/errors.js';
import type { TextSlot } from '../pipeline/plugin.js';
import { tokensForChars } from '../lib/tokens.js';
import type { MaskBook } from './masker.js';
import type { Matcher } from './matchers.js';
import type { GuardrailSpec, GuardrailStage, ModerationGuardrail, Verdict, WebhookGuardrail } from '../model/guardrails.js';

/** A guardrail ready to run: its spec, its name and its compiled text matcher (pii, regex, deny_list). */
export interface CompiledGuardrail {
  spec: GuardrailSpec;
  name: string;
  matcher: Matcher | undefined;
}

/** Who asked, sent to a webhook with the text (never the key). */
export interface RequestMeta {
  request_id: string;
  org_id: string | null;
  project_id: string | null;
  model: string | null;
  modality: string;
}

/** A webhook's or the moderation model's answer. */
export interface ExternalVerdict {
  action: 'allow' | 'block' | 'rewrite';
  categories: string[];
  /** With `rewrite`: the new texts, one per text sent. */
  texts?: string[];
}

/** What the engine calls outside itself: the webhook, the gateway's moderation model, the metrics. */
export interface GuardrailServices {
  webhook(g: WebhookGuardrail, stage: GuardrailStage, texts: string[], meta: RequestMeta, signal: AbortSignal): Promise<ExternalVerdict>;
  moderate(g: ModerationGuardrail, texts: string[], signal: AbortSignal): Promise<ExternalVerdict>;
  onVerdict(v: Verdict): void;
}

/** The refusal of a guardrail: which guardrail and which categories, never the matched text. */
export function blocked(name: string, categories: readonly string[]): GatewayError {
  return new GatewayError('guardrail_blocked', [name, categories.length > 0 ? categories.join(', ') : 'policy']);
}

/** Records a verdict (metrics count each); one row per guardrail, stage and action in the log (a stream's masks add up). */
export function addVerdict(verdicts: Verdict[], svc: GuardrailServices, v: Verdict): void {
  svc.onVerdict(v);
  const same = verdicts.find((o) => o.guardrail === v.guardrail && o.stage === v.stage && o.action === v.action);
  if (!same) {
    verdicts.push(v);
    return;
  }
  same.count += v.count;
  same.categories = [...new Set([...same.categories, ...v.categories])].sort();
}

const countBy = (categories: readonly string[]): string[] => [...new Set(categories)].sort();

/**
 * Runs a project's pre-upstream guardrails over a request's text, in order. Masks in
 * place (through the slots), records each verdict in `verdicts`, and throws
 * `guardrail_blocked` at the first that blocks: nothing has been sent upstream then.
 */
export async function guardRequest(
  list: readonly CompiledGuardrail[], slots: readonly TextSlot[], book: MaskBook, svc: GuardrailServices, meta: RequestMeta,
  verdicts: Verdict[], signal: AbortSignal,
): Promise<void> {
  const record = (v: Verdict): void => addVerdict(verdicts, svc, v);
  const stage: GuardrailStage = 'pre-upstream';
  for (const g of list) {
    const { spec, name } = g;
    if (g.matcher) {
      const action = (spec as { action: 'mask' | 'block' }).action;
      const restore = spec.type === 'pii' && spec.restore === true;
      const categories: string[] = [];
      for (const slot of slots) {
        const text = slot.get();
        const matches = g.matcher(text);
        if (matches.length === 0) continue;
        // A copy's matches are its primary's: counted once.
        if (!slot.copy) for (const m of matches) categories.push(m.category);
        if (action === 'mask') slot.set(book.apply(text, matches, restore));
        else if (!slot.copy) break;
      }
      if (categories.length === 0) {
        record({ guardrail: name, stage, action: 'allow', categories: [], count: 0 });
        continue;
      }
      record({ guardrail: name, stage, action, categories: countBy(categories), count: categories.length });
      if (action === 'block') {
        // What the gateway keeps of a refused request (its prompt, its logged body) holds no matched value either.
        for (const slot of slots) book.apply(slot.get(), g.matcher(slot.get()), false);
        throw blocked(name, countBy(categories));
      }
      continue;
    }
    const primary = slots.filter((s) => !s.copy);
    if (spec.type === 'max_input_chars' || spec.type === 'max_input_tokens') {
      const chars = primary.reduce((n, s) => n + s.get().length, 0);
      const size = spec.type === 'max_input_chars' ? chars : tokensForChars(chars);
      const over = size > spec.limit;
      record({ guardrail: name, stage, action: over ? 'block' : 'allow', categories: over ? [spec.type] : [], count: over ? 1 : 0 });
      if (over) throw blocked(name, [`${spec.type} ${size} > ${spec.limit}`]);
      continue;
    }
    const texts = primary.map((s) => s.get());
    const outcome = spec.type === 'webhook'
      ? await external(() => svc.webhook(spec, stage, texts, meta, signal), spec.on_error ?? 'block')
      : await external(() => svc.moderate(spec as ModerationGuardrail, texts, signal), 'block');
    if (outcome === 'error_allowed') {
      record({ guardrail: name, stage, action: 'error', categories: ['unavailable'], count: 0 });
      continue;
    }
    if (outcome === 'error_blocked') {
      record({ guardrail: name, stage, action: 'block', categories: ['unavailable'], count: 1 });
      throw blocked(name, ['unavailable']);
    }
    record({ guardrail: name, stage, action: outcome.action, categories: countBy(outcome.categories), count: outcome.action === 'allow' ? 0 : 1 });
    if (outcome.action === 'block') throw blocked(name, countBy(outcome.categories));
    if (outcome.action === 'rewrite') rewrite(slots, primary, outcome.texts ?? []);
  }
}

/** An external verdict, or what its failure means under `on_error`. */
async function external(call: () => Promise<ExternalVerdict>, onError: 'allow' | 'block'): Promise<ExternalVerdict | 'error_allowed' | 'error_blocked'> {
  try {
    return await call();
  } catch {
    return onError === 'allow' ? 'error_allowed' : 'error_blocked';
  }
}

/** A webhook's rewritten texts into the primary slots; a copy holding a rewritten primary's old text takes its new one. */
function rewrite(all: readonly TextSlot[], primary: readonly TextSlot[], texts: readonly string[]): void {
  const changed = new Map<string, string>();
  primary.forEach((slot, i) => {
    const next = texts[i];
    if (next === undefined) return;
    const old = slot.get();
    if (old !== next) changed.set(old, next);
    slot.set(next);
  });
  for (const slot of all) {
    if (!slot.copy) continue;
    const next = changed.get(slot.get());
    if (next !== undefined) slot.set(next);
  }
}
