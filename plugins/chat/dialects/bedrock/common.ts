import { cacheSplitUsage, finishFrom } from '../types.js';

/** Bedrock `usage` (Converse and the stream's metadata event). */
export interface ConverseUsage {
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadInputTokens?: number | null;
  cacheWriteInputTokens?: number | null;
}

/** Converse usage in the gateway's terms (its inputTokens exclude the cache reads and writes). */
export const converseUsage = cacheSplitUsage<keyof ConverseUsage>({
  input: 'inputTokens', output: 'outputTokens', cacheRead: 'cacheReadInputTokens', cacheWrite: 'cacheWriteInputTokens',
});

export const finishFromConverse = finishFrom({
  end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', model_context_window_exceeded: 'length',
  tool_use: 'tool_calls', guardrail_intervened: 'content_filter', content_filtered: 'content_filter',
});
