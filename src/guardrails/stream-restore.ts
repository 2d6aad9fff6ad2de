import type { MaskBook } from './masker.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const TEXT_KEYS = new Set(['content', 'text', 'delta', 'output_text', 'arguments', 'reasoning_content', 'thinking']);

/**
 * Puts a stream's placeholders back (`restore: true`) even when the model writes one
 * across events (`[EM`, `AIL_1]`), whatever the client format: in each event's JSON, the
 * text of its deltas (a string under a `delta` — OpenAI, Anthropic, Responses — or a
 * Gemini candidate's part) runs through one carry: a tail that may start a placeholder is
 * held back and put before the next delta's text. Whole strings (a Responses `done`
 * event's text) are restored on their own. An event is rewritten only when its text changed.
 */
export function streamRestorer(book: MaskBook): (frames: string) => string {
  let held = '';
  const carry = (text: string): string => {
    const whole = book.restoreText(held + text);
    held = '';
    const open = whole.lastIndexOf('[');
    if (open >= 0 && !whole.includes(']', open) && book.startsPlaceholder(whole.slice(open))) {
      held = whole.slice(open);
      return whole.slice(0, open);
    }
    return whole;
  };
  const walk = (value: unknown, key: string, inDelta: boolean): unknown => {
    if (typeof value === 'string') {
      if (!TEXT_KEYS.has(key)) return value;
      return inDelta ? carry(value) : book.restoreText(value);
    }
    if (Array.isArray(value)) return value.map((v) => walk(v, key, inDelta));
    if (!isObject(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, k, inDelta || k === 'delta' || k === 'candidates');
    return out;
  };
  const line = (l: string): string => {
    if (!l.startsWith('data:')) return l;
    const data = l.slice(5).trim();
    if (!data.startsWith('{')) return l;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return l;
    }
    const before = held;
    const next = JSON.stringify(walk(parsed, '', false));
    return next === JSON.stringify(parsed) && before === held ? l : `data: ${next}`;
  };
  return (frames) => (frames.includes('data:') ? frames.split('\n').map(line).join('\n') : frames);
}
