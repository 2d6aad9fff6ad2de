import { isObject } from './request.js';

/**
 * Reasoning ("thinking") across formats: what a client asked for, in one
 * dialect-independent form, and that request in each upstream's own fields.
 *
 *   client                      → Reasoning →  upstream
 *   Anthropic thinking/effort                  OpenAI chat `reasoning_effort`
 *   OpenAI `reasoning_effort`                  Anthropic `thinking` {enabled, budget_tokens} / disabled
 *   Responses `reasoning`                      Gemini `generationConfig.thinkingConfig`
 *   Gemini `thinkingConfig`
 *
 * The budget ↔ effort tables are LiteLLM's: effort → budget 1024 / 2048 / 4096 tokens
 * (low / medium / high; minimal as low, Anthropic's floor), budget → effort at
 * ≥ 10000 high, ≥ 5000 medium, ≥ 2000 low, else minimal. Pure functions, no state.
 */

export type Effort = 'minimal' | 'low' | 'medium' | 'high';

export interface Reasoning {
  /** false: the client turned reasoning off (Anthropic `disabled`, Gemini budget 0, OpenAI `none`). */
  enabled: boolean;
  /** The effort the client named, when it named one. */
  effort?: Effort;
  /** The token budget the client named (Anthropic budget_tokens, Gemini thinkingBudget > 0). */
  budget?: number;
  /** The client wants the reasoning text back (thinking blocks, includeThoughts, a Responses summary). */
  show: boolean;
}

/** Thinking budget per effort (LiteLLM's DEFAULT_REASONING_EFFORT_*_THINKING_BUDGET). */
const EFFORT_BUDGET: Readonly<Record<Effort, number>> = { minimal: 1024, low: 1024, medium: 2048, high: 4096 };

/** Anthropic's smallest `budget_tokens`. */
const ANTHROPIC_MIN_BUDGET = 1024;

/** The effort a budget stands for (LiteLLM's thresholds). */
export function budgetEffort(budget: number): Effort {
  if (budget >= 10000) return 'high';
  if (budget >= 5000) return 'medium';
  if (budget >= 2000) return 'low';
  return 'minimal';
}

/** An effort name of any client as one of ours: `max`/`xhigh` are high, unknown names undefined. */
function effortOf(v: unknown): Effort | undefined {
  if (v === 'minimal' || v === 'low' || v === 'medium' || v === 'high') return v;
  if (v === 'max' || v === 'xhigh') return 'high';
  return undefined;
}

const positive = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);

/** Anthropic Messages `thinking` and `output_config.effort`. */
export function fromAnthropic(thinking: unknown, outputConfig: unknown): Reasoning | undefined {
  const effort = isObject(outputConfig) ? effortOf(outputConfig.effort) : undefined;
  if (isObject(thinking)) {
    if (thinking.type === 'disabled') return { enabled: false, show: false };
    const budget = thinking.type === 'enabled' ? positive(thinking.budget_tokens) : undefined;
    return { enabled: true, ...(effort ? { effort } : {}), ...(budget ? { budget } : {}), show: true };
  }
  return effort ? { enabled: true, effort, show: false } : undefined;
}

/** OpenAI chat `reasoning_effort` (`none` turns reasoning off). */
export function fromOpenAI(reasoningEffort: unknown): Reasoning | undefined {
  if (reasoningEffort === 'none') return { enabled: false, show: false };
  const effort = effortOf(reasoningEffort);
  return effort ? { enabled: true, effort, show: true } : undefined;
}

/** Responses `reasoning: {effort, summary}`: a summary asks for the reasoning text. */
export function fromResponses(reasoning: unknown): Reasoning | undefined {
  if (!isObject(reasoning)) return undefined;
  if (reasoning.effort === 'none') return { enabled: false, show: false };
  const effort = effortOf(reasoning.effort);
  const show = typeof reasoning.summary === 'string' && reasoning.summary !== 'none';
  return effort || show ? { enabled: true, ...(effort ? { effort } : {}), show } : undefined;
}

/** Gemini `generationConfig.thinkingConfig` (`thinkingBudget` 0 off, -1 dynamic; `thinkingLevel`; `includeThoughts`). */
export function fromGemini(thinkingConfig: unknown): Reasoning | undefined {
  if (!isObject(thinkingConfig)) return undefined;
  const show = thinkingConfig.includeThoughts === true;
  if (thinkingConfig.thinkingBudget === 0) return { enabled: false, show: false };
  const effort = effortOf(thinkingConfig.thinkingLevel);
  const budget = positive(thinkingConfig.thinkingBudget);
  return { enabled: true, ...(effort ? { effort } : {}), ...(budget ? { budget } : {}), show };
}

/** The effort asked, or the one its budget stands for; medium when neither was named (adaptive, dynamic). */
function effortFor(r: Reasoning): Effort {
  return r.effort ?? (r.budget !== undefined ? budgetEffort(r.budget) : 'medium');
}

/** OpenAI chat `reasoning_effort`, or undefined when reasoning is off (nothing is sent: the model's default). */
export function toOpenAIEffort(r: Reasoning): Effort | undefined {
  return r.enabled ? effortFor(r) : undefined;
}

/**
 * Anthropic `thinking`: off → `disabled`; on → `enabled` with the client's budget, else
 * the effort's. The budget must be at least 1024 and below `max_tokens`: it is cut to
 * max_tokens − 1, and when that is under 1024 thinking is left out (undefined).
 */
export function toAnthropicThinking(r: Reasoning, maxTokens: number | undefined): Record<string, unknown> | undefined {
  if (!r.enabled) return { type: 'disabled' };
  let budget = Math.max(r.budget ?? EFFORT_BUDGET[effortFor(r)], ANTHROPIC_MIN_BUDGET);
  if (maxTokens !== undefined && budget >= maxTokens) budget = maxTokens - 1;
  return budget < ANTHROPIC_MIN_BUDGET ? undefined : { type: 'enabled', budget_tokens: budget };
}

/**
 * Gemini `thinkingConfig`: off → budget 0; on → the client's budget, else its effort's,
 * else -1 (dynamic: the model decides, as Anthropic's adaptive thinking);
 * `includeThoughts` when the client wants the reasoning text.
 */
export function toGeminiThinkingConfig(r: Reasoning): Record<string, unknown> {
  if (!r.enabled) return { thinkingBudget: 0 };
  const budget = r.budget ?? (r.effort ? EFFORT_BUDGET[r.effort] : -1);
  return { thinkingBudget: budget, ...(r.show ? { includeThoughts: true } : {}) };
}
