import { describe, expect, it } from 'vitest';
import type { GatewayError } from '../../src/sdk.js';
import { DEFAULT_MODERATION_MODEL, parseModerationRequest } from './index.js';

describe('moderation requests', () => {
  it.each([
    [{ input: 'hi' }, DEFAULT_MODERATION_MODEL, 'hi'],
    [{ model: 'text-moderation-latest', input: ['a', 'b'] }, 'text-moderation-latest', 'a\nb'],
    [{ input: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] }, DEFAULT_MODERATION_MODEL, 'look'],
  ])('%j → model %s, logged prompt %j', (body, model, prompt) => {
    expect(parseModerationRequest(body)).toMatchObject({ model, prompt, body });
  });

  it.each([[[], ''], [{ input: '' }, 'input'], [{ input: [] }, 'input'], [{ input: [3] }, 'input'], [{ input: 'x', model: '' }, 'model']])('refuses %j naming %s', (body, param) => {
    try {
      parseModerationRequest(body);
      expect.unreachable();
    } catch (err) {
      expect((err as GatewayError).toBody().error.param).toBe(param || null);
    }
  });
});
