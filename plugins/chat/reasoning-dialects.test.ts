import { describe, expect, it } from 'vitest';
import { chatRequest, deepFreeze } from './chat.testkit.js';
import { anthropicDialect } from './dialects/anthropic/index.js';
import { geminiDialect } from './dialects/gemini/index.js';
import { openaiDialect } from './dialects/openai/index.js';
import type { ChatRequest } from './request.js';
import type { Reasoning } from './reasoning.js';

/** A request that came in another client format (so it is translated), with the reasoning it asked for. */
const translated = (reasoning: Reasoning, extra: Record<string, unknown> = {}): ChatRequest => deepFreeze({
  ...chatRequest({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 8000, ...extra }),
  native: { format: 'responses' as const, body: {}, headers: {} },
  reasoning,
});
const body = (s: string): Record<string, unknown> => JSON.parse(s) as Record<string, unknown>;

describe('reasoning in each upstream dialect (issue 29)', () => {
  it('openai: reasoning_effort for a model that reasons, nothing for one that does not', () => {
    const req = translated({ enabled: true, budget: 6000, show: true });
    expect(body(openaiDialect.requestBody(req, 'o4-mini', { maxTokensParam: 'max_completion_tokens', reasoning: true })).reasoning_effort).toBe('medium');
    expect(body(openaiDialect.requestBody(req, 'gpt-4o-mini', {}))).not.toHaveProperty('reasoning_effort');
    // A translated Responses request's canonical reasoning_effort is rewritten the same way.
    expect(body(openaiDialect.requestBody(translated({ enabled: true, effort: 'high', show: false }, { reasoning_effort: 'high' }), 'gpt-4o-mini', {}))).not.toHaveProperty('reasoning_effort');
  });

  it('anthropic: thinking with a budget below max_tokens', () => {
    expect(body(anthropicDialect.requestBody(translated({ enabled: true, effort: 'high', show: true }), 'claude')).thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
    expect(body(anthropicDialect.requestBody(translated({ enabled: true, budget: 20000, show: true }), 'claude')).thinking).toEqual({ type: 'enabled', budget_tokens: 7999 });
    expect(body(anthropicDialect.requestBody(translated({ enabled: false, show: false }), 'claude')).thinking).toEqual({ type: 'disabled' });
  });

  it('gemini: generationConfig.thinkingConfig', () => {
    const config = (r: Reasoning): unknown => (body(geminiDialect.requestBody(translated(r), 'gemini-2.5-flash')).generationConfig as Record<string, unknown>).thinkingConfig;
    expect(config({ enabled: true, budget: 6000, show: true })).toEqual({ thinkingBudget: 6000, includeThoughts: true });
    expect(config({ enabled: true, show: true })).toEqual({ thinkingBudget: -1, includeThoughts: true });
    expect(config({ enabled: false, show: false })).toEqual({ thinkingBudget: 0 });
  });
});
