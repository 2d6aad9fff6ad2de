import { describe, expect, it } from 'vitest';
import type { ModelRoute } from '../../src/sdk.js';
import { modelRecords } from './records.js';

const caps = { streaming: true, vision: false, documents: false, cancellation: false, tools: true, parallelToolCalls: false, reasoning: false };
function route(provider: string, id: string, extra: Record<string, unknown> = {}): ModelRoute {
  return {
    provider: { id: provider },
    model: {
      id, upstreamId: `${id}@${provider}`, modality: 'chat', name: id, aliases: [], created: 1, description: '', family: '',
      inputModalities: ['text'], outputModalities: ['text'], tokenizer: 't', isModerated: false, contextLength: 8, maxOutputTokens: undefined,
      perRequestLimits: {}, supportedParameters: [], jsonOutput: false, structuredOutputs: false, capabilities: caps,
      deprecatedAt: undefined, deactivatedAt: undefined, stability: 'stable', pricing: { prompt: '0.000001', completion: '0.000002' }, pricingTiers: [], pricingVariants: {}, ...extra,
    },
  } as unknown as ModelRoute;
}

const NOW = Date.parse('2026-06-01');
const all = { includeDeactivated: true, excludeDeprecated: false, now: NOW };

describe('modelRecords', () => {
  it('merges the routes of one id into one record, the first route giving its fields', () => {
    const [m] = modelRecords([route('a', 'm1'), route('b', 'm1', { pricing: { prompt: '0' , completion: '0' }, aliases: ['alias'] })], all);
    expect(m).toMatchObject({ id: 'm1', owned_by: 'a', aliases: ['alias'], free: false });
    expect(m?.providers.map((p) => [p.providerId, p.modelName, p.pricing.prompt, p.streaming])).toEqual([['a', 'm1@a', '0.000001', true], ['b', 'm1@b', '0', true]]);
    expect(m?.pricing).toMatchObject({ prompt: '0.000001', completion: '0.000002', image: '0', audio_music_per_generation: '0' });
  });

  it('shows pricing tiers and variants only for models that have them', () => {
    const tiers = [{ abovePromptTokens: 200_000, pricing: { prompt: '0.0000025' }, pricePicos: {} }];
    const variants = { 'hd/1024x1024': { pricing: { image: '0.08' }, pricePicos: {} } };
    const [tiered, varied, plain] = modelRecords([route('a', 't', { pricingTiers: tiers }), route('a', 'v', { pricingVariants: variants }), route('a', 'p')], all);
    expect(tiered?.pricing_tiers).toEqual([{ above_prompt_tokens: 200_000, pricing: { prompt: '0.0000025' } }]);
    expect(varied?.pricing_variants).toEqual({ 'hd/1024x1024': { image: '0.08' } });
    expect(plain).not.toHaveProperty('pricing_tiers');
    expect(plain).not.toHaveProperty('pricing_variants');
  });

  it('adds the priced units beyond the spec keys and marks all-zero prices free', () => {
    const [m] = modelRecords([route('a', 'tts', { pricing: { input_character: '0' } })], all);
    expect(m?.pricing.input_character).toBe('0');
    expect(m?.free).toBe(true);
    expect(m?.deprecated_at).toBeNull();
  });

  it.each([
    ['deactivated, hidden by default', { deactivatedAt: '2026-01-01' }, { includeDeactivated: false, excludeDeprecated: false }, false],
    ['deactivated, shown on request', { deactivatedAt: '2026-01-01' }, { includeDeactivated: true, excludeDeprecated: false }, true],
    ['deactivation ahead', { deactivatedAt: '2027-01-01' }, { includeDeactivated: false, excludeDeprecated: false }, true],
    ['deprecated, excluded on request', { deprecatedAt: '2026-01-01' }, { includeDeactivated: false, excludeDeprecated: true }, false],
    ['deprecated, shown by default', { deprecatedAt: '2026-01-01' }, { includeDeactivated: false, excludeDeprecated: false }, true],
    ['deprecation ahead', { deprecatedAt: '2027-01-01' }, { includeDeactivated: false, excludeDeprecated: true }, true],
  ])('%s', (_name, dates, flags, listed) => {
    expect(modelRecords([route('a', 'm', dates)], { ...flags, now: NOW })).toHaveLength(listed ? 1 : 0);
  });
});
