import { microsToUsd, picosToMicros } from '../../src/money.js';
import { costPicos } from '../../src/pricing.js';
import type { ModelDef } from '../../src/providers/types.js';
import type { TokenUsage } from './dialects/types.js';

export interface ChatCost {
  inputMicros: number;
  outputMicros: number;
  totalMicros: number;
}

/**
 * Chat cost from token usage and the model's YAML prices. Cached prompt tokens are
 * priced at `input_cache_read` (or `prompt` when the model has no cache price).
 * Input and output are each rounded to micro-USD and the total is their sum, so the
 * three figures the client sees always add up and equal what the ledger charged.
 */
export function chatCost(model: ModelDef, u: TokenUsage): ChatCost {
  const cached = Math.min(u.cachedTokens ?? 0, u.promptTokens);
  const cacheKey = model.pricePicos.input_cache_read !== undefined ? 'input_cache_read' : 'prompt';
  const inputPicos = costPicos(model, { prompt: u.promptTokens - cached }) + costPicos(model, { [cacheKey]: cached })
    + costPicos(model, { input_cache_write: u.cacheWriteTokens ?? 0 });
  const inputMicros = picosToMicros(inputPicos);
  const outputMicros = picosToMicros(costPicos(model, { completion: u.completionTokens }));
  return { inputMicros, outputMicros, totalMicros: inputMicros + outputMicros };
}

/** The `usage` object of spec §2.5. */
export function usageObject(u: TokenUsage, c: ChatCost): Record<string, number> {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    cost_usd_total: microsToUsd(c.totalMicros),
    cost_usd_input: microsToUsd(c.inputMicros),
    cost_usd_output: microsToUsd(c.outputMicros),
  };
}

/** A rough token count (4 characters a token) for when the upstream reported none. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Upper bound of the prompt's tokens: byte-level BPE tokens cover at least one byte
 * each, so UTF-8 bytes plus a few framing tokens per message can never be exceeded.
 */
export function promptTokenBound(promptText: string, messages: number): number {
  return Buffer.byteLength(promptText, 'utf8') + 4 * messages + 3;
}
