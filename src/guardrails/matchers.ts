import { detectPii, type Match } from './pii.js';
import { PII_ENTITIES, type GuardrailSpec, type PiiEntity } from '../model/guardrails.js';

/** What finds a guardrail's matches in a text; undefined for the guardrails that do not match text (limits, webhook, moderation). */
export type Matcher = (text: string) => Match[];

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The most a regex guardrail's pattern may be (checked at PATCH too). */
export const MAX_PATTERN_CHARS = 1000;

function regexMatcher(patterns: readonly RegExp[], category: string): Matcher {
  return (text) => {
    const found: Match[] = [];
    for (const re of patterns) {
      re.lastIndex = 0;
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        if (m[0].length === 0) {
          re.lastIndex++;
          continue;
        }
        const start = m.index;
        const end = start + m[0].length;
        if (!found.some((f) => start < f.end && end > f.start)) found.push({ start, end, category });
      }
    }
    return found.sort((a, b) => a.start - b.start);
  };
}

/** Compiles a guardrail's text matcher once (the hook keeps it per project config). Throws on a bad pattern. */
export function compileMatcher(g: GuardrailSpec): Matcher | undefined {
  switch (g.type) {
    case 'pii': {
      const entities = new Set<PiiEntity>(g.entities ?? PII_ENTITIES);
      return (text) => detectPii(text, entities);
    }
    case 'regex':
      return regexMatcher(g.patterns.map((p) => new RegExp(p, 'gu')), (g.label ?? 'regex').toLowerCase());
    case 'deny_list': {
      const words = g.words.filter((w) => w.length > 0).map(escapeRegex);
      if (words.length === 0) return () => [];
      // Whole words: a word of letters is not found inside a longer one.
      const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${words.join('|')})(?![\\p{L}\\p{N}_])`, g.case_sensitive ? 'gu' : 'giu');
      return regexMatcher([re], (g.label ?? 'deny_list').toLowerCase());
    }
    default:
      return undefined;
  }
}
