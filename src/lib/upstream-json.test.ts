import { describe, expect, it } from 'vitest';
import { GatewayError } from './errors.js';
import { upstreamJson } from './upstream-json.js';

describe('upstreamJson', () => {
  it('parses an upstream body', () => {
    expect(upstreamJson('{"data":[{"b64_json":"AAAA"}]}', 'x')).toEqual({ data: [{ b64_json: 'AAAA' }] });
  });

  it.each(['', '<html>Bad gateway</html>', '{"data":'])('answers %j with 502 upstream_error and the caller\'s words', (text) => {
    let refusal: unknown;
    try {
      upstreamJson(text, 'the upstream sent a malformed response');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(GatewayError);
    expect((refusal as GatewayError).toBody().error).toMatchObject({ code: 'upstream_error', message: 'The upstream provider failed: the upstream sent a malformed response' });
    expect((refusal as GatewayError).status).toBe(502);
  });
});
