import { describe, expect, it } from 'vitest';
import { base64ToFloats, encodeVector, estimateInputTokens, floatsToBase64, tokenBound, vectorList } from './vectors.js';

describe('embedding vectors', () => {
  it('round-trips float32 little-endian base64 (what the OpenAI SDK decodes)', () => {
    const b64 = floatsToBase64([0.5, -1, 0.25]);
    expect(Buffer.from(b64, 'base64').readFloatLE(4)).toBe(-1);
    expect(base64ToFloats(b64)).toEqual([0.5, -1, 0.25]);
    expect(base64ToFloats(Buffer.from([1, 2, 3]).toString('base64'))).toBeUndefined();
  });

  it.each([
    [[0.5, 0.25], 'float', [0.5, 0.25]],
    [[0.5, 0.25], 'base64', floatsToBase64([0.5, 0.25])],
    [floatsToBase64([0.5]), 'float', [0.5]],
    [floatsToBase64([0.5]), 'base64', floatsToBase64([0.5])],
    [['x'], 'float', undefined],
    [null, 'base64', undefined],
  ] as const)('encodes %j as %s', (v, want, out) => {
    expect(encodeVector(v, want)).toEqual(out);
  });

  it('wraps the single vector JSONata unwraps', () => {
    expect(vectorList([1, 2])).toEqual([[1, 2]]);
    expect(vectorList([[1], [2]])).toEqual([[1], [2]]);
    expect(vectorList({ values: [1] })).toBeUndefined();
  });

  it('estimates tokens below the reservation bound', () => {
    const texts = ['abcd', 'é', 'x'.repeat(9)];
    expect(estimateInputTokens(texts)).toBe(1 + 1 + 3);
    expect(tokenBound(texts, undefined)).toBe(5 + 3 + 10); // UTF-8 bytes + 1 per input
    expect(tokenBound(undefined, [[1, 2], [3]])).toBe(3);
  });
});
