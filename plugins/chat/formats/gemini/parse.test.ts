import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/sdk.js';
import { deepFreeze, expectRefusal } from '../../chat.testkit.js';
import { jsonSchemaOf, modelAction, parseGeminiRequest } from './parse.js';

const input = (body: unknown, target = 'gem-1:generateContent', query: Record<string, unknown> = {}) =>
  parseGeminiRequest(deepFreeze({ body, headers: {}, params: { '*': target }, query, orgId: 'org' }));
const user = (...parts: unknown[]) => ({ role: 'user', parts });

describe('Gemini request → canonical chat', () => {
  it.each([
    ['systemInstruction → system; user/model turns → user/assistant; generation settings', {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [user({ text: 'a' }), { role: 'model', parts: [{ text: 'b' }] }, { parts: [{ text: 'c' }] }],
      generationConfig: { maxOutputTokens: 9, temperature: 0.1, topP: 0.5, stopSequences: ['X'], candidateCount: 2, presencePenalty: 0.2, seed: 7, topK: 3 },
    }, {
      model: 'gem-1',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'a' }] }, { role: 'assistant', content: [{ type: 'text', text: 'b' }] }, { role: 'user', content: [{ type: 'text', text: 'c' }] }],
      max_tokens: 9, temperature: 0.1, top_p: 0.5, stop: ['X'], n: 2, presence_penalty: 0.2, seed: 7,
    }],
    ['an inline image → a data-URL image part; thought parts dropped', { contents: [user({ text: 'see' }, { inlineData: { mimeType: 'image/png', data: 'AA' } }, { text: 'hmm', thought: true })] }, {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }] }],
    }],
    ['functionDeclarations (OpenAPI types lower-cased, or parametersJsonSchema as is) → tools; ANY with one name → that function', {
      contents: [user({ text: 'go' })],
      tools: [{ functionDeclarations: [{ name: 'w', description: 'Weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } } }, { name: 't', parametersJsonSchema: { type: 'object' } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['w'] } },
    }, {
      tools: [{ type: 'function', function: { name: 'w', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }, { type: 'function', function: { name: 't', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'w' } },
    }],
    ['calls and their responses are paired by name when Gemini gives no ids', {
      contents: [user({ text: 'go' }), { role: 'model', parts: [{ functionCall: { name: 'w', args: { city: 'P' } } }, { functionCall: { name: 't', args: {} } }] },
        user({ functionResponse: { name: 't', response: { now: 1 } } }, { functionResponse: { name: 'w', response: { temp: 2 } } })],
    }, {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_0_w', type: 'function', function: { name: 'w', arguments: '{"city":"P"}' } }, { id: 'call_1_t', type: 'function', function: { name: 't', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1_t', content: '{"now":1}' }, { role: 'tool', tool_call_id: 'call_0_w', content: '{"temp":2}' }],
    }],
    ['responseMimeType json with a schema → response_format json_schema; without → json_object', {
      contents: [user({ text: 'x' })], generationConfig: { responseMimeType: 'application/json', responseSchema: { type: 'OBJECT' } },
    }, { response_format: { type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' } } } }],
  ])('%s', (_n, body, expected) => {
    const r = input(body);
    expect(r.body).toMatchObject(expected);
    expect(r.untranslatable).toBeUndefined();
    expect(r.native).toEqual({ format: 'gemini', body, headers: {} });
  });

  it('candidateCount is the number of choices the output bound is reserved for (each may write all of it)', () => {
    expect(input({ contents: [user({ text: 'x' })], generationConfig: { maxOutputTokens: 9, candidateCount: 4 } })).toMatchObject({ maxTokens: 9, choices: 4 });
    expect(input({ contents: [user({ text: 'x' })] })).toMatchObject({ choices: 1 });
  });

  it('streamGenerateContent with alt=sse is a stream; the model comes from the path (a models/ prefix is fine)', () => {
    expect(input({ contents: [user({ text: 'x' })] }, 'models%2Fgem-1:streamGenerateContent', { alt: 'sse' })).toMatchObject({ model: 'gem-1', stream: true });
  });

  it.each([
    ['cachedContent', { contents: [user({ text: 'x' })], cachedContent: 'c/1' }, 'cachedContent'],
    ['a built-in tool', { contents: [user({ text: 'x' })], tools: [{ googleSearch: {} }] }, 'tools[0]'],
    ['a file part', { contents: [user({ fileData: { fileUri: 'gs://x' } })] }, 'contents[0].parts[0]'],
    ['an audio part', { contents: [user({ inlineData: { mimeType: 'audio/wav', data: 'AA' } })] }, 'contents[0].parts[0]'],
  ])('marks %s as served only by a Gemini model', (_n, body, param) => {
    expect(input(body).untranslatable).toMatchObject({ param });
  });

  it.each([
    ['no contents', {}, 'contents'], ['a bad role', { contents: [{ role: 'system', parts: [] }] }, 'contents[0].role'],
    ['parts missing', { contents: [{ role: 'user' }] }, 'contents[0]'], ['maxOutputTokens 0', { contents: [user({ text: 'x' })], generationConfig: { maxOutputTokens: 0 } }, 'generationConfig.maxOutputTokens'],
    ['generation_config (the proto name)', { contents: [user({ text: 'x' })], generationConfig: { maxOutputTokens: 3 }, generation_config: { max_output_tokens: 100000 } }, 'generation_config'],
    ['max_output_tokens beside maxOutputTokens', { contents: [user({ text: 'x' })], generationConfig: { maxOutputTokens: 3, max_output_tokens: 100000 } }, 'generationConfig.max_output_tokens'],
    ['candidate_count', { contents: [user({ text: 'x' })], generationConfig: { candidate_count: 8 } }, 'generationConfig.candidate_count'],
    ['candidateCount 0', { contents: [user({ text: 'x' })], generationConfig: { candidateCount: 0 } }, 'generationConfig.candidateCount'],
    ['candidateCount 1.5', { contents: [user({ text: 'x' })], generationConfig: { candidateCount: 1.5 } }, 'generationConfig.candidateCount'],
  ])('refuses %s with 400 naming the field', (_n, body, param) => {
    expectRefusal(() => input(body), param);
  });

  it('a stream without alt=sse, and an unknown method, are refused', () => {
    expect(() => input({ contents: [user({ text: 'x' })] }, 'gem-1:streamGenerateContent')).toThrow(/alt=sse/);
    expect(() => modelAction('gem-1:embedContent')).toThrow(GatewayError);
    expect(() => modelAction('gem-1')).toThrow(GatewayError);
  });

  it('jsonSchemaOf lower-cases OpenAPI types at every depth', () => {
    expect(jsonSchemaOf({ type: 'ARRAY', items: { type: 'INTEGER' }, description: 'KEEP' })).toEqual({ type: 'array', items: { type: 'integer' }, description: 'KEEP' });
  });
});
