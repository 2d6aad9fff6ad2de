import { afterEach, describe, expect, it, vi } from 'vitest';
import { providerMessage, UpstreamFailure } from './upstream.js';

describe('an upstream error body', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each([
    ['OpenAI, Anthropic, Gemini: error.message', '{"error":{"message":"bad key"}}', 'bad key'],
    ['a string error', '{"error":"nope"}', 'nope'],
    ['ElevenLabs: detail.message', '{"detail":{"message":"quota"}}', 'quota'],
    ['Deepgram: err_msg', '{"err_msg":"bad audio"}', 'bad audio'],
    ['a top-level message', '{"message":"m"}', 'm'],
    ['not JSON: the text', '  upstream exploded  ', 'upstream exploded'],
    ['JSON null: the text (no crash)', 'null', 'null'],
  ])('%s', (_n, body, message) => {
    expect(providerMessage(body)).toBe(message);
    expect(new UpstreamFailure('4xx', 'status 400', 400, body).providerMessage).toBe(message);
  });

  it('is parsed once for its message and its JSON, however often they are read', () => {
    const parse = vi.spyOn(JSON, 'parse');
    const f = new UpstreamFailure('4xx', 'status 400', 400, '{"error":{"message":"API key not valid","status":"INVALID_ARGUMENT"}}');
    expect(f.providerMessage).toBe('API key not valid');
    expect(f.json).toEqual({ error: { message: 'API key not valid', status: 'INVALID_ARGUMENT' } });
    expect(f.providerMessage).toBe('API key not valid');
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it('has no JSON when the body is not JSON', () => {
    expect(new UpstreamFailure('5xx', 'status 502', 502, '<html>').json).toBeUndefined();
  });
});
