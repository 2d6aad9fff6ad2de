import type { GatewayError } from '../lib/errors.js';
import type { ReplyFilter } from '../pipeline/hooks.js';
import type { BodyCapture } from './bodies.js';
import { addVerdict, blocked, type CompiledGuardrail, type ExternalVerdict, type GuardrailServices, type RequestMeta } from './engine.js';
import type { MaskBook } from './masker.js';
import { jsonReplyText, sseReplyText } from './reply-text.js';
import { streamRestorer } from './stream-restore.js';
import type { ModerationGuardrail, Verdict } from '../model/guardrails.js';

/** The most of a streamed reply's text kept for the checks at its end. */
const MAX_CHECKED_CHARS = 4 * 1024 * 1024;

interface ReplyParts {
  /** The project's post-upstream guardrails, in order. */
  list: readonly CompiledGuardrail[];
  book: MaskBook;
  svc: GuardrailServices;
  meta: RequestMeta;
  verdicts: Verdict[];
  signal: AbortSignal;
  capture: BodyCapture | undefined;
}

/**
 * The reply side of a project's guardrails and body logging (src/pipeline/hooks.ts ReplyFilter):
 * post-upstream guardrails check the reply's text (a stream's once it is complete, so a
 * block ends it with an error event), `mask` ones mask what the client gets, the
 * captured body is what the upstream sent (masked values never restored in it), and
 * placeholders of `restore: true` guardrails are put back for the client last.
 */
export function replyFilter(p: ReplyParts): ReplyFilter {
  const { list, book, svc, verdicts } = p;
  const record = (v: Verdict): void => addVerdict(verdicts, svc, v);
  const masking = list.filter((g) => g.matcher && (g.spec as { action?: string }).action === 'mask');
  const mask = (text: string): string => {
    for (const g of masking) {
      const matches = g.matcher?.(text) ?? [];
      if (matches.length > 0) {
        record({ guardrail: g.name, stage: 'post-upstream', action: 'mask', categories: [...new Set(matches.map((m) => m.category))].sort(), count: matches.length });
        text = book.apply(text, matches, false);
      }
    }
    return text;
  };
  /** The blocking checks over a reply's text: the error of the first that blocks. */
  const check = async (text: string): Promise<GatewayError | undefined> => {
    for (const g of list) {
      const { spec, name } = g;
      if (g.matcher) {
        if ((spec as { action?: string }).action !== 'block') continue;
        const matches = g.matcher(text);
        const categories = [...new Set(matches.map((m) => m.category))].sort();
        record({ guardrail: name, stage: 'post-upstream', action: matches.length > 0 ? 'block' : 'allow', categories, count: matches.length });
        if (matches.length > 0) {
          // Known to the book, the refused values are scrubbed from the logged body too.
          book.apply(text, matches, false);
          return blocked(name, categories);
        }
        continue;
      }
      if (spec.type !== 'webhook' && spec.type !== 'moderation') continue;
      let outcome: ExternalVerdict;
      try {
        outcome = spec.type === 'webhook'
          ? await svc.webhook(spec, 'post-upstream', [text], p.meta, p.signal)
          : await svc.moderate(spec as ModerationGuardrail, [text], p.signal);
      } catch {
        const allow = spec.type === 'webhook' && spec.on_error === 'allow';
        record({ guardrail: name, stage: 'post-upstream', action: allow ? 'error' : 'block', categories: ['unavailable'], count: allow ? 0 : 1 });
        if (allow) continue;
        return blocked(name, ['unavailable']);
      }
      // A reply is allowed or blocked: a rewrite of a reply is not applied (docs/guardrails.md).
      const block = outcome.action === 'block';
      record({ guardrail: name, stage: 'post-upstream', action: block ? 'block' : 'allow', categories: outcome.categories, count: block ? 1 : 0 });
      if (block) return blocked(name, outcome.categories);
    }
    return undefined;
  };
  let streamed = '';
  const restoreStream = book.restores ? streamRestorer(book) : (text: string): string => text;
  return {
    async body(json) {
      const err = await check(jsonReplyText(json));
      if (err) {
        p.capture?.addResponse(json);
        throw err;
      }
      const masked = mask(json);
      p.capture?.addResponse(masked);
      return book.restoreJson(masked);
    },
    frames(text) {
      if (streamed.length < MAX_CHECKED_CHARS) streamed += sseReplyText(text);
      const masked = mask(text);
      p.capture?.addResponse(masked);
      return restoreStream(masked);
    },
    end: () => check(streamed),
  };
}
