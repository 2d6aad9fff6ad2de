import type { Match } from './pii.js';

/** A value as it appears inside a JSON string literal. */
const jsonEscaped = (value: string): string => JSON.stringify(value).slice(1, -1);

/**
 * The placeholders of one request: the same value always gets the same placeholder
 * (`[EMAIL_1]`, `[EMAIL_2]`, … by category), so the canonical and native copies of a
 * request mask alike and a reply can be restored. Held by the request only.
 */
export class MaskBook {
  private readonly byValue = new Map<string, string>();
  private readonly counts = new Map<string, number>();
  /** Placeholder → value, for the guardrails with `restore: true`. */
  private readonly restorable = new Map<string, string>();

  get size(): number {
    return this.byValue.size;
  }

  get restores(): boolean {
    return this.restorable.size > 0;
  }

  placeholder(category: string, value: string, restore: boolean): string {
    let ph = this.byValue.get(value);
    if (ph === undefined) {
      const tag = category.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
      const n = (this.counts.get(tag) ?? 0) + 1;
      this.counts.set(tag, n);
      ph = `[${tag}_${n}]`;
      this.byValue.set(value, ph);
    }
    if (restore) this.restorable.set(ph, value);
    return ph;
  }

  /** `text` with each match replaced by its placeholder. */
  apply(text: string, matches: readonly Match[], restore: boolean): string {
    if (matches.length === 0) return text;
    let out = '';
    let at = 0;
    for (const m of matches) {
      out += text.slice(at, m.start) + this.placeholder(m.category, text.slice(m.start, m.end), restore);
      at = m.end;
    }
    return out + text.slice(at);
  }

  /**
   * `text` with every value masked so far replaced by its placeholder, plain or as a JSON
   * string holds it: what the gateway stores (the log's prompt, bodies) never holds them.
   */
  scrub(text: string): string {
    if (this.byValue.size === 0) return text;
    const values = [...this.byValue.keys()].sort((a, b) => b.length - a.length);
    for (const v of values) {
      const ph = this.byValue.get(v) as string;
      if (text.includes(v)) text = text.split(v).join(ph);
      const escaped = jsonEscaped(v);
      if (escaped !== v && text.includes(escaped)) text = text.split(escaped).join(ph);
    }
    return text;
  }

  /** Plain text with the restorable placeholders put back. */
  restoreText(text: string): string {
    if (this.restorable.size === 0 || !text.includes('[')) return text;
    for (const [ph, value] of this.restorable) if (text.includes(ph)) text = text.split(ph).join(value);
    return text;
  }

  /** Whether `tail` (`[EMA`) may be the start of a restorable placeholder still to come. */
  startsPlaceholder(tail: string): boolean {
    for (const ph of this.restorable.keys()) if (ph.length > tail.length && ph.startsWith(tail)) return true;
    return false;
  }

  /** A reply's JSON text (a body, or SSE frames) with the restorable placeholders put back. */
  restoreJson(text: string): string {
    if (this.restorable.size === 0 || !text.includes('[')) return text;
    for (const [ph, value] of this.restorable) if (text.includes(ph)) text = text.split(ph).join(jsonEscaped(value));
    return text;
  }
}
