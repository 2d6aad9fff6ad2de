import { describe, expect, it } from 'vitest';
import { MaskBook } from './masker.js';
import { streamRestorer } from './stream-restore.js';

/** A book that masked one email (restorable) and one card (not). */
function book(): MaskBook {
  const b = new MaskBook();
  b.placeholder('email', 'jane@example.com', true);
  b.placeholder('card', '4111111111111111', false);
  return b;
}
const sse = (obj: unknown, event?: string): string => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(obj)}\n\n`;
/** The text a client assembles from a format's deltas. */
const assembled = (frames: string[], pick: (o: Record<string, unknown>) => unknown): string => frames.join('').split('\n')
  .filter((l) => l.startsWith('data: {')).map((l) => pick(JSON.parse(l.slice(6)) as Record<string, unknown>)).filter((x) => typeof x === 'string').join('');

describe('restoring placeholders in a stream, split across events', () => {
  const pieces = ['Mail ', '[EM', 'AIL', '_1', '] now, card [CARD_1], [', 'x] ok'];

  it('OpenAI chat chunks', () => {
    const restore = streamRestorer(book());
    const out = pieces.map((p) => restore(sse({ id: 'c', choices: [{ index: 0, delta: { content: p } }] })));
    expect(assembled(out, (o) => (o.choices as Array<{ delta: { content: string } }>)[0]?.delta.content)).toBe('Mail jane@example.com now, card [CARD_1], [x] ok');
  });

  it('Anthropic content_block_delta events', () => {
    const restore = streamRestorer(book());
    const out = pieces.map((p) => restore(sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } }, 'content_block_delta')));
    expect(out.join('')).toContain('event: content_block_delta');
    expect(assembled(out, (o) => (o.delta as { text: string }).text)).toBe('Mail jane@example.com now, card [CARD_1], [x] ok');
  });

  it('Gemini candidates and Responses deltas, and a Responses done event restored whole', () => {
    const gemini = streamRestorer(book());
    const g = pieces.map((p) => gemini(sse({ candidates: [{ content: { role: 'model', parts: [{ text: p }] } }] })));
    expect(assembled(g, (o) => (o.candidates as Array<{ content: { parts: Array<{ text: string }> } }>)[0]?.content.parts[0]?.text)).toContain('Mail jane@example.com now');
    const responses = streamRestorer(book());
    const r = pieces.map((p) => responses(sse({ type: 'response.output_text.delta', delta: p }, 'response.output_text.delta')));
    expect(assembled(r, (o) => o.delta)).toBe('Mail jane@example.com now, card [CARD_1], [x] ok');
    expect(responses(sse({ type: 'response.output_text.done', text: 'Mail [EMAIL_1] now' }))).toContain('"text":"Mail jane@example.com now"');
  });

  it('leaves frames without a placeholder as they were, byte for byte', () => {
    const restore = streamRestorer(book());
    const frame = 'data: {"choices":[{"delta":{"content":"plain \\u00e9 text"}}]}\n\n';
    expect(restore(frame)).toBe(frame);
    expect(restore('data: [DONE]\n\n')).toBe('data: [DONE]\n\n');
  });
});
