import { microsToUsd, type ModelDef, picosAt, picosToMicros, picosToMicrosCeil, type PriceKey, pricesFor, type TokenCounts } from '../../src/sdk.js';
import type { TokenUsage } from './dialects/types.js';
import type { ChatRequest } from './request.js';

export interface ChatCost {
  inputMicros: number;
  outputMicros: number;
  totalMicros: number;
}

/** Output bound for a model that declares neither max_output_tokens nor a context length. */
const DEFAULT_MAX_OUTPUT = 4096;

/** The price key for tokens of one kind, falling back to the plain prompt price when the model has none. */
function inputKey(prices: Partial<Record<PriceKey, bigint>>, key: PriceKey): PriceKey {
  return prices[key] !== undefined ? key : 'prompt';
}

/**
 * Chat cost from token usage and the model's YAML prices (the pricing tier its prompt
 * size reaches, if any). Prompt tokens read from the provider's cache are priced at
 * `input_cache_read`, tokens written to it at `input_cache_write` (each at `prompt`
 * when the model has no such price), the rest at `prompt`. Completion tokens the
 * provider reports as reasoning are priced at `internal_reasoning` when the model has
 * that price, the rest at `completion`. Input and output are each
 * rounded to micro-USD and the total is their sum, so the three figures the client
 * sees always add up and equal the charge.
 */
export function chatCost(model: ModelDef, u: TokenUsage): ChatCost {
  // The prices are selected once (the tier the prompt reaches) and every count priced at them.
  const prices = pricesFor(model, { promptTokens: u.promptTokens });
  const cached = Math.min(u.cachedTokens ?? 0, u.promptTokens);
  const written = Math.min(u.cacheWriteTokens ?? 0, u.promptTokens - cached);
  const inputPicos = picosAt(prices.prompt, u.promptTokens - cached - written)
    + picosAt(prices[inputKey(prices, 'input_cache_read')], cached)
    + picosAt(prices[inputKey(prices, 'input_cache_write')], written);
  const inputMicros = picosToMicros(inputPicos);
  const reasoning = prices.internal_reasoning !== undefined ? Math.min(u.reasoningTokens ?? 0, u.completionTokens) : 0;
  const outputMicros = picosToMicros(picosAt(prices.completion, u.completionTokens - reasoning) + picosAt(prices.internal_reasoning, reasoning));
  return { inputMicros, outputMicros, totalMicros: inputMicros + outputMicros };
}

export const ZERO_COST: ChatCost = Object.freeze({ inputMicros: 0, outputMicros: 0, totalMicros: 0 });

/**
 * The most a request can cost on a model: every prompt token at the dearest input
 * price, and the completion bound at the dearest output price (completion or internal_reasoning) — max_tokens, else the model's max_output_tokens,
 * else its context length — for each of the `n` choices (the prompt is billed once,
 * as providers bill it), at the prices of the tier the prompt bound reaches. A model
 * that `requires_max_tokens` is refused by its provider without it, so then only the
 * prompt is held.
 */
export function maxChatCostPicos(req: ChatRequest, model: ModelDef): bigint {
  const completion = maxCompletionTokens(req, model);
  const prices = pricesFor(model, { promptTokens: req.promptBound });
  const write = prices.input_cache_write ?? 0n;
  const prompt = prices.prompt ?? 0n;
  return picosAt(write > prompt ? write : prices.prompt, req.promptBound) + picosAt(dearestOutputPrice(prices), completion);
}

/** Any output token may be a reasoning one: the bound is held at the dearer of the two output prices. */
function dearestOutputPrice(prices: Partial<Record<PriceKey, bigint>>): bigint | undefined {
  const output = prices.completion ?? 0n;
  const reasoning = prices.internal_reasoning ?? 0n;
  return reasoning > output ? reasoning : prices.completion;
}

/** One choice's output bound: max_tokens, else the model's max_output_tokens, else its context length (0 for a model that requires max_tokens: its provider refuses the request). */
function completionBound(maxTokens: number | undefined, model: ModelDef): number {
  return maxTokens ?? (model.requiresMaxTokens ? 0 : model.maxOutputTokens ?? (model.contextLength || DEFAULT_MAX_OUTPUT));
}

/** The completion bound of `maxChatCostPicos`: max_tokens (else the model's bound) for each of the `n` choices. */
function maxCompletionTokens(req: ChatRequest, model: ModelDef): number {
  return completionBound(req.maxTokens, model) * (req.choices ?? 1);
}

/**
 * What a one-choice request that names no output bound holds on a model beyond its prompt
 * (docs/limits.md, "Budgets and the output bound"): `defaultMaxTokens` (the project's or
 * gateway.yaml's default, sent upstream), else the model's whole output window, at the
 * dearest output price, rounded up to micro-USD as reservations are.
 */
export function outputBoundOf(model: ModelDef, defaultMaxTokens: number | undefined): { tokens: number; micros: number } {
  const tokens = completionBound(defaultMaxTokens, model);
  return { tokens, micros: picosToMicrosCeil(picosAt(dearestOutputPrice(model.pricePicos), tokens)) };
}

/** The most tokens a request can use on a model (prompt bound + completion bound): what a `tpm` limit reserves. */
export function maxChatTokens(req: ChatRequest, model: ModelDef): number {
  return req.promptBound + maxCompletionTokens(req, model);
}

/** The cost fields every chat usage object carries (spec §2.5). */
export function costFields(c: ChatCost): Record<string, number> {
  return {
    cost_usd_total: microsToUsd(c.totalMicros),
    cost_usd_input: microsToUsd(c.inputMicros),
    cost_usd_output: microsToUsd(c.outputMicros),
  };
}

/** The OpenAI-format `usage` object of spec §2.5. */
export function usageObject(u: TokenUsage, c: ChatCost): Record<string, unknown> {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    ...costFields(c),
  };
}

/** The billed tokens by type, for the gateway's metrics and traces (`ex.usage`): the same counts as the client's `usage`. */
export function tokenCounts(u: TokenUsage | undefined): TokenCounts | undefined {
  if (!u) return undefined;
  const cachedInput = Math.min(u.cachedTokens ?? 0, u.promptTokens);
  const reasoning = Math.min(u.reasoningTokens ?? 0, u.completionTokens);
  return { input: u.promptTokens, output: u.completionTokens, cachedInput, reasoning };
}

/** The billed token counts, kept in the request log row (`extra.usage`) so every charge can be audited. */
export function usageRecord(u: TokenUsage | undefined): Record<string, number> {
  if (!u) return { prompt_tokens: 0, completion_tokens: 0 };
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    ...(u.cachedTokens ? { cached_tokens: u.cachedTokens } : {}),
    ...(u.cacheWriteTokens ? { cache_write_tokens: u.cacheWriteTokens } : {}),
    ...(u.reasoningTokens ? { reasoning_tokens: u.reasoningTokens } : {}),
  };
}
