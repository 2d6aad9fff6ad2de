import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../request.js';
import { mergedTurns, type Turn } from './turns.js';

/** A dialect of strings: user and tool messages in user turns, the assistant's in its own; anything else has no turn. */
const turnOf = (m: ChatMessage): Turn<'user' | 'assistant', string> | undefined =>
  m.role === 'user' || m.role === 'tool' ? { role: 'user', content: String(m.content) }
    : m.role === 'assistant' ? { role: 'assistant', content: String(m.content) } : undefined;
const join = (into: string, next: string): string => `${into}+${next}`;

describe('mergedTurns', () => {
  it('keeps alternating turns as they are, each written once', () => {
    const messages = [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }];
    expect(mergedTurns(messages, turnOf, join)).toEqual([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }]);
  });

  it('merges consecutive turns of one role in order (tool results with the next user words), across messages with no turn', () => {
    const messages = [
      { role: 'system', content: 's' }, { role: 'user', content: 'a' }, { role: 'assistant', content: 'b' },
      { role: 'tool', content: 'r1' }, { role: 'tool', content: 'r2' }, { role: 'system', content: 'x' }, { role: 'user', content: 'c' },
    ];
    expect(mergedTurns(messages, turnOf, join)).toEqual([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'r1+r2+c' }]);
  });

  it('gives no turns for no messages, or none that has one', () => {
    expect(mergedTurns([], turnOf, join)).toEqual([]);
    expect(mergedTurns([{ role: 'system', content: 's' }], turnOf, join)).toEqual([]);
  });
});
