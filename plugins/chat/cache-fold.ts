import { completionObject, type FinishReason, firstChoice, type ReplyContext } from './dialects/types.js';
import type { ToolCall } from './tools.js';

/**
 * A stream's canonical chunks folded into the completion they add up to (choice 0: its
 * text, reasoning, tool calls and finish reason), with the text pieces in stream order,
 * so a replayed stream sends the same pieces.
 */
export function foldChunks(chunks: readonly string[], ctx: ReplyContext): { completion: Record<string, unknown>; pieces: string[] } {
  const pieces: string[] = [];
  let reasoning = '';
  let finish: FinishReason = 'stop';
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  for (const data of chunks) {
    const choice = firstChoice(data);
    if (!choice) continue;
    const d = choice.delta;
    if (typeof d?.content === 'string' && d.content) pieces.push(d.content);
    if (typeof d?.reasoning_content === 'string') reasoning += d.reasoning_content;
    for (const piece of d?.tool_calls ?? []) {
      const i = piece.index ?? 0;
      const call = (calls[i] ??= { id: '', name: '', arguments: '' });
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.name = piece.function.name;
      call.arguments += piece.function?.arguments ?? '';
    }
    if (choice.finish_reason) finish = choice.finish_reason as FinishReason;
  }
  const toolCalls: ToolCall[] = calls.filter(Boolean).map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
  return { completion: completionObject(ctx, pieces.join(''), finish, undefined, toolCalls, reasoning), pieces };
}
