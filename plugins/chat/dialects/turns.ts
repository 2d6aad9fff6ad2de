import type { ChatMessage } from '../request.js';

/** One turn of a conversation as an upstream with two alternating roles takes it (Anthropic, Bedrock Converse, Gemini). */
export interface Turn<R extends string, C> {
  role: R;
  content: C;
}

/**
 * The conversation as such turns: `turnOf` writes one message as a turn of the upstream
 * (undefined: none, e.g. a system message, which such upstreams take apart), and a turn of
 * the role the last one has is merged into it (`merge`), so tool results and the user's next
 * words share a turn, and parallel results travel together.
 */
export function mergedTurns<R extends string, C>(
  messages: readonly ChatMessage[],
  turnOf: (m: ChatMessage) => Turn<R, C> | undefined,
  merge: (into: C, next: C) => C,
): Turn<R, C>[] {
  const turns: Turn<R, C>[] = [];
  for (const m of messages) {
    const turn = turnOf(m);
    if (!turn) continue;
    const last = turns[turns.length - 1];
    if (last && last.role === turn.role) last.content = merge(last.content, turn.content);
    else turns.push(turn);
  }
  return turns;
}
