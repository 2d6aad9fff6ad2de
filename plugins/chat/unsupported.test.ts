import { describe, expect, it } from 'vitest';
import type { ModelRoute } from '../../src/sdk.js';
import { chatRequest } from './chat.testkit.js';
import { policyOf, resolveUnsupported, type UnsupportedParam } from './unsupported.js';

const route = (provider?: 'error' | 'drop', model?: 'error' | 'drop' | 'translate'): ModelRoute =>
  ({ provider: { unsupportedParams: provider }, model: { unsupportedParams: model } }) as unknown as ModelRoute;

describe('policyOf: project, else gateway override, else model, else provider, else translate', () => {
  it.each([
    [route(), undefined, 'translate'],
    [route('drop'), undefined, 'drop'],
    [route('drop', 'error'), undefined, 'error'],
    [route('drop', 'error'), 'translate', 'translate'],
  ] as const)('%j with override %s → %s', (r, override, expected) => {
    expect(policyOf(r, override)).toBe(expected);
  });

  it.each([
    [route('drop', 'translate'), 'error', 'translate', 'error'],
    [route(), 'drop', 'error', 'drop'],
    [route('drop', 'error'), null, 'translate', 'translate'],
    [route('drop', 'error'), undefined, undefined, 'error'],
  ] as const)('%j with project %s and gateway %s → %s', (r, project, gateway, expected) => {
    expect(policyOf(r, project, gateway)).toBe(expected);
  });
});

describe('resolveUnsupported', () => {
  const search: UnsupportedParam = { param: 'tools[0]', name: 'web_search', kind: 'web_search', message: 'm', value: { type: 'web_search' } };
  const cache: UnsupportedParam = { param: 'system[0].cache_control', name: 'cache_control', kind: 'cache_control', message: 'm', value: undefined };
  const req = { ...chatRequest({ messages: [{ role: 'user', content: 'hi' }] }), unsupported: [search, cache, cache] };

  it('translates for a dialect that carries it, drops the rest (each name once), leaves the input alone', () => {
    const r = resolveUnsupported(req, 'gemini', 'translate');
    expect(r).toMatchObject({ translated: ['web_search'], dropped: ['cache_control'] });
    expect(r.body.web_search_options).toEqual({});
    expect(req.body).not.toHaveProperty('web_search_options');
  });

  it('drops what a dialect cannot carry, and everything under drop', () => {
    expect(resolveUnsupported(req, 'openai', 'translate').dropped).toEqual(['web_search', 'cache_control']);
    expect(resolveUnsupported(req, 'gemini', 'drop')).toMatchObject({ translated: [], dropped: ['web_search', 'cache_control'] });
  });

  it('refuses under error, naming the first in the client terms', () => {
    expect(() => resolveUnsupported(req, 'gemini', 'error', { clientParam: (p) => `x.${p}` })).toThrow(expect.objectContaining({ status: 400 }));
    try {
      resolveUnsupported(req, 'gemini', 'error', { clientParam: (p) => `x.${p}` });
    } catch (err) {
      expect((err as { extras: { param?: string } }).extras.param).toBe('x.tools[0]');
    }
  });
});
