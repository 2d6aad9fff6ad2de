import { describe, expect, it } from 'vitest';
import { parseUsdToPicos } from '../lib/money.js';
import { costPicos, pricesFor } from './pricing.js';
import type { ModelDef, PriceKey } from './types.js';

const set = (p: Partial<Record<PriceKey, string>>) => ({ pricing: p, pricePicos: Object.fromEntries(Object.entries(p).map(([k, v]) => [k, parseUsdToPicos(v)])) });
const model = {
  ...set({ prompt: '0.000001', completion: '0.000002', image: '0.04' }),
  pricingTiers: [{ abovePromptTokens: 100, ...set({ prompt: '0.000003' }) }, { abovePromptTokens: 1000, ...set({ prompt: '0.000005', completion: '0.000006' }) }],
  pricingVariants: { 'hd/1024x1792': set({ image: '0.12' }) },
} as unknown as ModelDef;

describe('prices for a request', () => {
  it.each([
    ['the base prices', {}, { prompt: 1_000_000n, completion: 2_000_000n }],
    ['at a threshold: still the base', { promptTokens: 100 }, { prompt: 1_000_000n }],
    ['past it: the tier, for the keys it names', { promptTokens: 101 }, { prompt: 3_000_000n, completion: 2_000_000n }],
    ['past two: the highest', { promptTokens: 5000 }, { prompt: 5_000_000n, completion: 6_000_000n }],
    ['a variant', { variant: 'hd/1024x1792' }, { image: 120_000_000_000n, prompt: 1_000_000n }],
    ['an unknown variant: the base', { variant: 'unknown' }, { image: 40_000_000_000n }],
  ])('%s', (_n, sel, expected) => {
    expect(pricesFor(model, sel)).toMatchObject(expected);
  });

  it('costs a consumption at the selected prices', () => {
    expect(costPicos(model, { prompt: 200, completion: 10 }, { promptTokens: 200 })).toBe(200n * 3_000_000n + 10n * 2_000_000n);
    expect(costPicos(model, { image: 2 }, { variant: 'hd/1024x1792' })).toBe(240_000_000_000n);
    expect(costPicos(model, { image: 2 })).toBe(80_000_000_000n);
  });
});
