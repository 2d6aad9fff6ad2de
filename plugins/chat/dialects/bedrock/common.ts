import { reportedTokens } from '../../../../src/sdk.js';
import type { FinishReason, TokenUsage } from '../types.js';

/** Bedrock `usage` (Converse and the stream's metadata event). */
export interface ConverseUsage {
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadInputTokens?: number | null;
  cacheWriteInputTokens?: number | null;
}

/** Converse usage in the gateway's terms: inputTokens exclude the cache reads and writes, which are priced apart. */
export function converseUsage(u: ConverseUsage | null | undefined): TokenUsage | undefined {
  const input = reportedTokens(u?.inputTokens, 'usage.inputTokens');
  if (!u || input === undefined) return undefined;
  const read = reportedTokens(u.cacheReadInputTokens, 'usage.cacheReadInputTokens') ?? 0;
  const write = reportedTokens(u.cacheWriteInputTokens, 'usage.cacheWriteInputTokens') ?? 0;
  const output = reportedTokens(u.outputTokens, 'usage.outputTokens') ?? 0;
  return { promptTokens: input + read + write, completionTokens: output, cachedTokens: read, cacheWriteTokens: write };
}

const STOP_REASONS: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', model_context_window_exceeded: 'length',
  tool_use: 'tool_calls', guardrail_intervened: 'content_filter', content_filtered: 'content_filter',
};

export function finishFromConverse(reason: unknown): FinishReason {
  return (typeof reason === 'string' ? STOP_REASONS[reason] : undefined) ?? 'stop';
}
