import { ApiError, FunctionCallingConfigMode, GoogleGenAI, Type } from '@google/genai';
import { describe, expect, it } from 'vitest';
import { chatMicros, post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * The Gemini API on the gateway (`/v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`, also under `/v1/`), driven by the unmodified
 * @google/genai SDK with only `baseUrl` changed: Gemini models untouched, Claude and
 * GPT translated, metered, errors in Google's shape.
 */

const t = useOrgGateway('gemini-native', '5', {}, { ledger: true });
const ai = (apiVersion?: string): GoogleGenAI => new GoogleGenAI({ apiKey: t.key, httpOptions: { baseUrl: t.url, ...(apiVersion ? { apiVersion } : {}) } });
const REPLY = 'This is a simulated reply. This is a';
const usd = (n: unknown): number => Math.round((n as number) * 1e6);

const MODELS = [
  { model: 'gemini-2.5-flash', provider: 'google', price: { prompt: '0.30', completion: '2.50' } },
  { model: 'claude-haiku-4-5', provider: 'anthropic', price: { prompt: '1', completion: '5' } },
  { model: 'gpt-4o-mini', provider: 'openai', price: { prompt: '0.15', completion: '0.60' } },
];

const WEATHER = {
  name: 'get_weather', description: 'Weather of a city',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
};

describe.each(MODELS)('$model through @google/genai', (c) => {
  it.each(['v1beta', 'v1'])('generateContent (%s): text, usage with its cost, charged exactly that', async (version) => {
    const before = await t.balance(t.orgId);
    const r = await ai(version).models.generateContent({
      model: c.model, contents: 'Hello there', config: { systemInstruction: 'Be brief.', maxOutputTokens: 100 },
    });
    expect(r.text).toBe(REPLY);
    expect(r.candidates?.[0]?.finishReason).toBe('STOP');
    const usage = r.usageMetadata as unknown as Record<string, number>;
    expect(usage.candidatesTokenCount).toBe(8);
    const cost = chatMicros(c.price, { prompt: usage.promptTokenCount as number, completion: 8 });
    expect(usd(usage.cost_usd_total)).toBe(cost);
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });

  it('generateContentStream: the text arrives in pieces, the last event carries the finish and the billed usage', async () => {
    const stream = await ai().models.generateContentStream({ model: c.model, contents: 'Hello there', config: { maxOutputTokens: 100 } });
    let text = '';
    let last: Record<string, unknown> | undefined;
    let events = 0;
    for await (const chunk of stream) {
      events++;
      text += chunk.text ?? '';
      last = chunk as unknown as Record<string, unknown>;
    }
    expect(text).toBe(REPLY);
    expect(events).toBeGreaterThan(1);
    expect(last).toMatchObject({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { candidatesTokenCount: 8 } });
    expect(usd((last?.usageMetadata as Record<string, unknown> | undefined)?.cost_usd_total)).toBeGreaterThan(0);
  });

  it('function calling: a functionCall comes back, and its functionResponse is answered', async () => {
    const config = { tools: [{ functionDeclarations: [WEATHER] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.AUTO } }, maxOutputTokens: 100 };
    const first = await ai().models.generateContent({ model: c.model, contents: 'Weather in Paris?', config });
    expect(first.functionCalls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'sim' } })]);
    const call = first.functionCalls?.[0];
    const second = await ai().models.generateContent({
      model: c.model, config,
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: call }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 21 } } }] },
      ],
    });
    expect(second.text).toBe(REPLY);
  });

  it('generateContentStream with tools: the functionCall arrives whole', async () => {
    const config = { tools: [{ functionDeclarations: [WEATHER] }], maxOutputTokens: 100 };
    const stream = await ai().models.generateContentStream({ model: c.model, contents: 'Weather in Paris? [[sim:tool_calls=1]]', config });
    const calls = [];
    for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'sim' } })]);
  });
});

describe('auth, errors and metering in Google\'s terms', () => {
  it('takes the key as x-goog-api-key (what the SDK sends) or Bearer; a wrong key is a 401 the SDK raises as ApiError', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const url = `${t.url}/v1beta/models/gemini-2.5-flash:generateContent`;
    expect((await postJson(url, body, t.key)).status).toBe(200);
    expect((await postJson(url, body, undefined, { 'x-goog-api-key': t.key })).status).toBe(200);
    const bad = await new GoogleGenAI({ apiKey: 'tg_wrong', httpOptions: { baseUrl: t.url } }).models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ApiError);
    expect((bad as ApiError).status).toBe(401);
    const r = await postJson(url, body, undefined, { 'x-goog-api-key': 'tg_wrong' });
    expect(r.body).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED', details: [{ reason: 'invalid_api_key' }] } });
  });

  it('an unknown model is a 404 NOT_FOUND; an unknown method a 404 route_not_found', async () => {
    const r = await postJson(`${t.url}/v1beta/models/nope-1:generateContent`, { contents: [{ parts: [{ text: 'x' }] }] }, t.key);
    expect(r).toMatchObject({ status: 404, body: { error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'model_not_found' }] } } });
    const m = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:countTokens`, { contents: [] }, t.key);
    expect(m).toMatchObject({ status: 404, body: { error: { details: [{ reason: 'route_not_found' }] } } });
  });

  it.each([
    [{ contents: [] }, 'contents'], [{ contents: [{ role: 'bot', parts: [] }] }, 'contents[0].role'],
    [{ contents: [{ parts: [{ text: 'x' }] }], generationConfig: { maxOutputTokens: 0 } }, 'generationConfig.maxOutputTokens'],
  ])('bad input %j → 400 INVALID_ARGUMENT naming %s', async (body, param) => {
    const r = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent`, body, t.key);
    expect(r).toMatchObject({ status: 400, body: { error: { status: 'INVALID_ARGUMENT', details: [{ reason: 'invalid_request', metadata: { param } }] } } });
  });

  it('a JSON schema goes to Gemini and GPT; Claude refuses it with 400 naming generationConfig.responseMimeType', async () => {
    const config = { responseMimeType: 'application/json', responseSchema: { type: Type.OBJECT, properties: { answer: { type: Type.STRING } } } };
    for (const model of ['gemini-2.5-flash', 'gpt-4o-mini']) {
      const r = await ai().models.generateContent({ model, contents: 'Answer in JSON', config });
      expect(JSON.parse(r.text ?? '')).toEqual({ answer: 'sim' });
    }
    const err = await ai().models.generateContent({ model: 'claude-haiku-4-5', contents: 'Answer in JSON', config: { ...config, maxOutputTokens: 50 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).message).toContain('generationConfig.responseMimeType');
  });

  it('streamGenerateContent without alt=sse is refused; a stream that breaks ends with a Google error event', async () => {
    const body = { contents: [{ parts: [{ text: 'hi' }] }] };
    const r = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent`, body, t.key);
    expect(r).toMatchObject({ status: 400, body: { error: { details: [{ metadata: { param: 'alt' } }] } } });
    const res = await post(`${t.url}/v1beta/models/claude-haiku-4-5:streamGenerateContent?alt=sse`, { contents: [{ parts: [{ text: 'go [[sim:drop_mid_stream]]' }] }], generationConfig: { maxOutputTokens: 50 } }, t.key);
    const events = await readSse(res);
    expect(JSON.parse(events[events.length - 1]?.data ?? '{}')).toMatchObject({ error: { code: 502, status: 'UNAVAILABLE' } });
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ errorCode: 'upstream_error', usedProvider: 'anthropic' });
  });
});
