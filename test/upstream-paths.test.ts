import { describe, expect, it } from 'vitest';
import { GatewayError } from '../src/lib/errors.js';
import { fillPath } from '../src/pipeline/upstream.js';
import { useOrgGateway } from './fixtures.js';
import { postJson } from './harness.js';

/**
 * Values placed into an upstream path template (`/text-to-speech/{voice}`,
 * `/models/{model}:{action}`) can never leave their segment: not by `..` or `.`
 * (which URL parsing would resolve, sending the gateway's key to another path), not
 * by `/`, `?` or `#`, percent-encoded or not.
 */
const t = useOrgGateway('paths', '1', {}, { ledger: true });

const HOSTILE = ['..', '.', '', '%2e%2e', '%2E.', '.%2e', '../../admin', 'a/../../b', '/', '//evil.example', '?x=1', '#frag', '\\..', 'x\r\ny'];

/** The literal segments of a template around its placeholders, e.g. `/models/{model}:{action}` → 2 segments, first `models`. */
function segmentsOf(template: string): string[] {
  return template.split('/').filter((s) => s !== '');
}

describe('every provider endpoint whose path has a placeholder', () => {
  it('keeps a hostile value inside its segment, or refuses it with 400', () => {
    const templates = new Map<string, string>();
    for (const route of t.gateway.catalog.allRoutes()) {
      const { path } = route.endpoint;
      if (/\{\w+\}/.test(path)) templates.set(`${route.provider.id} ${path}`, `${route.provider.baseUrl}|${path}`);
    }
    // ElevenLabs speech, Gemini chat, music and embeddings at least.
    expect(templates.size).toBeGreaterThanOrEqual(4);
    for (const [name, entry] of templates) {
      const [base = '', template = ''] = entry.split('|');
      const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '');
      for (const value of HOSTILE) {
        let filled: string;
        try {
          filled = fillPath(template, Object.fromEntries(names.map((n) => [n, value])));
        } catch (err) {
          expect(err, `${name} ${JSON.stringify(value)}`).toBeInstanceOf(GatewayError);
          expect((err as GatewayError).status).toBe(400);
          continue;
        }
        const url = new URL(base + filled);
        const basePath = new URL(base).pathname.replace(/\/$/, '');
        expect(url.origin, `${name} ${JSON.stringify(value)}`).toBe(new URL(base).origin);
        expect(url.search + url.hash, `${name} ${JSON.stringify(value)}`).toBe('');
        const segments = segmentsOf(url.pathname.slice(basePath.length));
        expect(url.pathname.startsWith(`${basePath}/`), `${name} ${JSON.stringify(value)} → ${url.pathname}`).toBe(true);
        expect(segments.length, `${name} ${JSON.stringify(value)} → ${url.pathname}`).toBe(segmentsOf(template).length);
        expect(segments[0], `${name} ${JSON.stringify(value)}`).toBe(segmentsOf(template)[0]);
      }
    }
  });
});

describe('ElevenLabs voice in the path', () => {
  it.each(['..', '.', '%2e%2e', '../../v1/user'])('voice %j is refused with 400 before any upstream call, nothing charged', async (voice) => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/audio/speech`, { model: 'eleven_multilingual_v2', voice, input: 'hello' }, t.key);
    if (r.status === 200) {
      // Encoded into one segment: the upstream saw the text-to-speech path, nothing else.
      expect(Object.keys(t.sim.calls()).every((k) => /^POST \/elevenlabs\/v1\/text-to-speech\/[^/]+$/.test(k))).toBe(true);
      return;
    }
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: { code: 'invalid_request', param: 'voice' } });
    expect(t.sim.calls()).toEqual({});
    expect(await t.balance(t.orgId)).toBe(before);
  });
});
