import { describe, expect, it } from 'vitest';
import { GatewayError, type ModelRoute } from '../../src/sdk.js';
import { checkEmbeddingRoute, parseEmbeddingRequest } from './validate.js';

const ok = (input: unknown, extra: Record<string, unknown> = {}) => parseEmbeddingRequest({ model: 'm', input, ...extra });
const refusal = (fn: () => unknown): { param: string | null | undefined } => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return { param: (err as GatewayError).extras.param };
  }
  throw new Error('not refused');
};

describe('parseEmbeddingRequest', () => {
  it.each([
    ['a string', 'hi', ['hi'], undefined],
    ['strings', ['a', 'b'], ['a', 'b'], undefined],
    ['token ids', [1, 2, 3], undefined, [[1, 2, 3]]],
    ['token-id arrays', [[1], [2, 3]], undefined, [[1], [2, 3]]],
  ])('accepts %s', (_name, input, texts, tokens) => {
    expect(ok(input)).toMatchObject({ texts, tokens, encoding: 'float', dimensions: undefined });
  });

  it('reads encoding_format and dimensions', () => {
    expect(ok('x', { encoding_format: 'base64', dimensions: 64 })).toMatchObject({ encoding: 'base64', dimensions: 64 });
  });

  it.each([
    ['no body', () => parseEmbeddingRequest(null), null],
    ['no model', () => parseEmbeddingRequest({ input: 'x' }), 'model'],
    ['an empty string', () => ok(''), 'input'],
    ['an empty array', () => ok([]), 'input'],
    ['an empty string in the list', () => ok(['a', '']), 'input[1]'],
    ['an empty token array', () => ok([[1], []]), 'input[1]'],
    ['negative token ids', () => ok([-1]), 'input[0]'],
    ['an object', () => ok({ text: 'x' }), 'input'],
    ['a bad encoding', () => ok('x', { encoding_format: 'binary' }), 'encoding_format'],
    ['zero dimensions', () => ok('x', { dimensions: 0 }), 'dimensions'],
    ['string dimensions', () => ok('x', { dimensions: '64' }), 'dimensions'],
  ])('refuses %s', (_name, fn, param) => {
    expect(refusal(fn).param).toBe(param);
  });
});

function route(limits: Record<string, string>, params: string[]): ModelRoute {
  return { model: { id: 'emb', perRequestLimits: limits, supportedParameters: params } } as unknown as ModelRoute;
}

describe('checkEmbeddingRoute', () => {
  it('holds the YAML per-request limits', () => {
    const r = route({ max_inputs: '2', max_dimensions: '512' }, ['dimensions']);
    expect(() => checkEmbeddingRoute(ok(['a', 'b'], { dimensions: 512 }), r)).not.toThrow();
    expect(refusal(() => checkEmbeddingRoute(ok(['a', 'b', 'c']), r)).param).toBe('input');
    expect(refusal(() => checkEmbeddingRoute(ok('a', { dimensions: 513 }), r)).param).toBe('dimensions');
  });

  it('refuses dimensions for a model that does not list them', () => {
    expect(refusal(() => checkEmbeddingRoute(ok('a', { dimensions: 8 }), route({}, []))).param).toBe('dimensions');
    expect(() => checkEmbeddingRoute(ok('a'), route({}, []))).not.toThrow();
  });
});
