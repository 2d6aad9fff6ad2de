import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/*
 * Issue 27, finding 7: a key in the URL (Google's REST style, `…:generateContent?key=…`).
 * It is accepted on the Gemini-native routes only, and never written to the server log:
 * fastify's request line logs the URL, so every credential-looking query parameter is
 * redacted there.
 */
const lines: Array<Record<string, unknown>> = [];
const logStream = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  },
});
const t = useOrgGateway('url-key', '5', { yaml: { log: { level: 'info' } }, logStream }, { ledger: true });
const gemini = { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }], generationConfig: { maxOutputTokens: 20 } };
const loggedText = (): string => lines.map((l) => JSON.stringify(l)).join('\n');

describe('a key in the URL', () => {
  it('authenticates a Gemini-native call (?key=, as Google\'s REST examples send it), and the log line keeps no key', async () => {
    const r = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent?key=${t.key}`, gemini);
    expect(r.status).toBe(200);
    const id = r.headers.get('x-request-id')!;
    expect((await logRow(t, id)).status).toBe(200);
    const incoming = lines.find((l) => l.reqId === id && l.msg === 'incoming request');
    expect((incoming?.req as { url?: string } | undefined)?.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent?key=[REDACTED]');
    expect(loggedText()).not.toContain(t.key);
  });

  it('is redacted in the log under every credential-looking name, on any route, other parameters kept', async () => {
    const secret = 'tg_notarealkey0000000000';
    const query = ['api_key', 'apikey', 'API-KEY', 'token', 'access_token', 'x-goog-api-key', 'key'].map((n) => `${n}=${secret}`).join('&');
    const r = await fetch(`${t.url}/v1/models?alt=sse&${query}`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-request-id')!;
    const incoming = lines.find((l) => l.reqId === id && l.msg === 'incoming request');
    const url = (incoming?.req as { url?: string } | undefined)?.url ?? '';
    expect(url).toBe('/v1/models?alt=sse&api_key=[REDACTED]&apikey=[REDACTED]&API-KEY=[REDACTED]&token=[REDACTED]&access_token=[REDACTED]&x-goog-api-key=[REDACTED]&key=[REDACTED]');
    expect(loggedText()).not.toContain(secret);
  });

  it('is not a credential on the OpenAI-style routes: 401 without a header', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions?key=${t.key}`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(401);
    expect(loggedText()).not.toContain(t.key);
  });

  it('loses to a header: a wrong ?key= with a valid x-goog-api-key is served', async () => {
    const r = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent?key=tg_wrong`, gemini, undefined, { 'x-goog-api-key': t.key });
    expect(r.status).toBe(200);
  });
});
