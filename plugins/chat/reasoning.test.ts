import { describe, expect, it } from 'vitest';
import { budgetEffort, fromAnthropic, fromGemini, fromOpenAI, fromResponses, toAnthropicThinking, toGeminiThinkingConfig, toOpenAIEffort } from './reasoning.js';

describe('reasoning translations', () => {
  it('reads each client format', () => {
    expect(fromAnthropic({ type: 'enabled', budget_tokens: 6000 }, undefined)).toEqual({ enabled: true, budget: 6000, show: true });
    expect(fromAnthropic({ type: 'adaptive' }, { effort: 'high' })).toEqual({ enabled: true, effort: 'high', show: true });
    expect(fromAnthropic({ type: 'disabled' }, undefined)).toEqual({ enabled: false, show: false });
    expect(fromAnthropic(undefined, { effort: 'low' })).toEqual({ enabled: true, effort: 'low', show: false });
    expect(fromAnthropic(undefined, undefined)).toBeUndefined();
    expect(fromOpenAI('high')).toEqual({ enabled: true, effort: 'high', show: true });
    expect(fromOpenAI('none')).toEqual({ enabled: false, show: false });
    expect(fromResponses({ effort: 'low', summary: 'auto' })).toEqual({ enabled: true, effort: 'low', show: true });
    expect(fromGemini({ thinkingBudget: 0 })).toEqual({ enabled: false, show: false });
    expect(fromGemini({ thinkingBudget: -1, includeThoughts: true })).toEqual({ enabled: true, show: true });
    expect(fromGemini({ thinkingLevel: 'low' })).toEqual({ enabled: true, effort: 'low', show: false });
  });

  it('maps budgets to efforts at LiteLLM\'s thresholds', () => {
    expect([1024, 1999, 2000, 4999, 5000, 9999, 10000, 32000].map(budgetEffort))
      .toEqual(['minimal', 'minimal', 'low', 'low', 'medium', 'medium', 'high', 'high']);
  });

  it('writes each upstream field', () => {
    expect(toOpenAIEffort({ enabled: true, budget: 12000, show: true })).toBe('high');
    expect(toOpenAIEffort({ enabled: true, show: true })).toBe('medium');
    expect(toOpenAIEffort({ enabled: false, show: false })).toBeUndefined();
    expect(toAnthropicThinking({ enabled: true, effort: 'high', show: false }, undefined)).toEqual({ type: 'enabled', budget_tokens: 4096 });
    expect(toAnthropicThinking({ enabled: true, effort: 'high', show: false }, 3000)).toEqual({ type: 'enabled', budget_tokens: 2999 });
    expect(toAnthropicThinking({ enabled: true, effort: 'high', show: false }, 1000)).toBeUndefined();
    expect(toAnthropicThinking({ enabled: false, show: false }, 1000)).toEqual({ type: 'disabled' });
    expect(toGeminiThinkingConfig({ enabled: true, budget: 6000, show: true })).toEqual({ thinkingBudget: 6000, includeThoughts: true });
    expect(toGeminiThinkingConfig({ enabled: true, effort: 'medium', show: false })).toEqual({ thinkingBudget: 2048 });
    expect(toGeminiThinkingConfig({ enabled: true, show: true })).toEqual({ thinkingBudget: -1, includeThoughts: true });
    expect(toGeminiThinkingConfig({ enabled: false, show: false })).toEqual({ thinkingBudget: 0 });
  });
});
