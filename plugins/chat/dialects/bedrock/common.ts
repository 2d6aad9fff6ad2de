import { cacheSplitUsage, finishFrom, type CacheSplitUsage } from '../types.js';

/** Bedrock `usage` (Converse's and the stream's metadata event's): its inputTokens exclude the cache reads and writes. */
const USAGE = { input: 'inputTokens', output: 'outputTokens', cacheRead: 'cacheReadInputTokens', cacheWrite: 'cacheWriteInputTokens' } as const;
export type ConverseUsage = CacheSplitUsage<typeof USAGE>;
/** Converse usage in the gateway's terms. */
export const converseUsage = cacheSplitUsage(USAGE);

export const finishFromConverse = finishFrom({
  end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', model_context_window_exceeded: 'length',
  tool_use: 'tool_calls', guardrail_intervened: 'content_filter', content_filtered: 'content_filter',
});
