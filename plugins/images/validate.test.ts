import { describe, expect, it } from 'vitest';
import type { GatewayError, ModelRoute } from '../../src/sdk.js';
import { checkImageRoute, parseImageRequest, pricedPerToken, variantOf } from './validate.js';

const route = (model: Record<string, unknown>): ModelRoute => ({
  model: { perRequestLimits: {}, pricePicos: {}, pricingVariants: {}, supportedParameters: [], ...model },
} as unknown as ModelRoute);
const DALLE3 = route({ perRequestLimits: { max_images: '1', prompt_characters: '10' }, pricePicos: { image: 1n }, pricingVariants: { 'standard/1024x1024': {}, 'hd/1792x1024': {} } });

const param = (fn: () => unknown): string | null | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as GatewayError).toBody().error.param;
  }
  return undefined;
};

describe('image requests', () => {
  it('reads the request with OpenAI defaults', () => {
    expect(parseImageRequest({ model: 'dall-e-3', prompt: 'a fox' })).toMatchObject({ n: 1, size: undefined, quality: undefined, responseFormat: undefined, prompt: 'a fox' });
    expect(variantOf(parseImageRequest({ model: 'm', prompt: 'p' }))).toBe('standard/1024x1024');
    expect(variantOf(parseImageRequest({ model: 'm', prompt: 'p', quality: 'hd', size: '1792x1024' }))).toBe('hd/1792x1024');
  });

  it.each([
    [[], ''], [{ prompt: 'p' }, 'model'], [{ model: 'm' }, 'prompt'], [{ model: 'm', prompt: '  ' }, 'prompt'], [{ model: 'm', prompt: 'p', n: 11 }, 'n'],
    [{ model: 'm', prompt: 'p', n: 1.5 }, 'n'], [{ model: 'm', prompt: 'p', response_format: 'png' }, 'response_format'], [{ model: 'm', prompt: 'p', size: 5 }, 'size'],
  ])('refuses %j naming %s', (body, p) => {
    expect(param(() => parseImageRequest(body))).toBe(p || null);
  });

  it.each([
    [{ model: 'dall-e-3', prompt: 'p', n: 2 }, 'n'], [{ model: 'dall-e-3', prompt: 'a'.repeat(11) }, 'prompt'],
    [{ model: 'dall-e-3', prompt: 'p', size: '512x512' }, 'size'], [{ model: 'dall-e-3', prompt: 'p', quality: 'hd' }, 'quality'],
  ])('checks %j against the model: 400 naming %s', (body, p) => {
    expect(param(() => checkImageRoute(parseImageRequest(body), DALLE3))).toBe(p);
  });

  it('accepts a priced variant, and any size for a model priced per token', () => {
    expect(() => checkImageRoute(parseImageRequest({ model: 'dall-e-3', prompt: 'p', quality: 'hd', size: '1792x1024' }), DALLE3)).not.toThrow();
    const gpt = route({ pricePicos: { prompt: 1n, completion: 1n }, pricingVariants: { 'x/y': {} } });
    expect(pricedPerToken(gpt)).toBe(true);
    expect(() => checkImageRoute(parseImageRequest({ model: 'gpt-image-1', prompt: 'p', size: '1536x1024', quality: 'high' }), gpt)).not.toThrow();
  });
});
