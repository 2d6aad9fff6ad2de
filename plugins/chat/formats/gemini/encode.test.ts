import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/sdk.js';
import { chunkJson, completionObject, toolCallDelta } from '../../dialects/types.js';
import { geminiDialect } from '../../dialects/gemini/index.js';
import { CTX, chatRequest, deepFreeze, parseSseText } from '../../chat.testkit.js';
import { formatGeminiError, geminiEncoder, geminiFromCompletion, geminiUsageObject } from './encode.js';
import { geminiFormat } from './index.js';

const COST = { inputMicros: 3, outputMicros: 4, totalMicros: 7 };
const USAGE = { promptTokens: 10, completionTokens: 6, cachedTokens: 2, reasoningTokens: 1 };

describe('canonical → Gemini replies', () => {
  it('usageMetadata: candidates exclude thoughts; cost fields added', () => {
    expect(geminiUsageObject(USAGE, COST)).toEqual({
      promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 16, cachedContentTokenCount: 2, thoughtsTokenCount: 1,
      cost_usd_total: 0.000007, cost_usd_input: 0.000003, cost_usd_output: 0.000004,
    });
  });

  it.each([['stop', 'STOP'], ['length', 'MAX_TOKENS'], ['content_filter', 'SAFETY'], ['tool_calls', 'STOP']])('finish %s → %s; text then functionCall parts', (finish, reason) => {
    const calls = [{ id: 'call_1', type: 'function' as const, function: { name: 'w', arguments: '{"a":1}' } }];
    const r = geminiFromCompletion(deepFreeze(completionObject(CTX, 'Hi', finish as 'stop', undefined, calls)), 'Hi', CTX, USAGE, COST);
    expect(r).toMatchObject({
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }, { functionCall: { id: 'call_1', name: 'w', args: { a: 1 } } }] }, finishReason: reason, index: 0 }],
      modelVersion: 'asked-model', responseId: 'test', usageMetadata: { cost_usd_total: 0.000007 },
    });
  });

  it('a stream: one event per text delta; function calls gathered and sent whole in the last event with the usage', () => {
    const enc = geminiEncoder(CTX);
    const frames = [
      ...enc.chunk(chunkJson(CTX, { role: 'assistant', content: '' }, null)), ...enc.chunk(chunkJson(CTX, { content: 'Hi' }, null)),
      ...enc.chunk(chunkJson(CTX, toolCallDelta(0, { id: 'c', name: 'w', arguments: '{"a"' }), null)), ...enc.chunk(chunkJson(CTX, toolCallDelta(0, { arguments: ':1}' }), null)),
      ...enc.chunk(chunkJson(CTX, {}, 'tool_calls')), ...enc.finish(USAGE, COST),
    ];
    const events = parseSseText(frames.join('')).map((e) => JSON.parse(e.data) as Record<string, unknown>);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }] });
    expect(events[1]).toMatchObject({ candidates: [{ content: { parts: [{ functionCall: { id: 'c', name: 'w', args: { a: 1 } } }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 10 } });
  });

  it('errors in Google\'s shape with the gateway\'s code as ErrorInfo reason', () => {
    const err = new GatewayError('invalid_request', ['bad'], { param: 'contents' }).withContext({ requestedModel: 'm' });
    expect(formatGeminiError(err)).toEqual({ error: { code: 400, message: 'bad', status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'invalid_request', domain: 'tollgate', metadata: { param: 'contents', requestedModel: 'm' } }] } });
    expect(formatGeminiError(new GatewayError('upstream_timeout', [5]))).toMatchObject({ error: { code: 504, status: 'DEADLINE_EXCEEDED' } });
  });
});

describe('Gemini in, Gemini out (native)', () => {
  const req = deepFreeze({ ...chatRequest({ messages: [{ role: 'user', content: 'x' }] }), native: { format: 'gemini' as const, body: { contents: [{ parts: [{ text: 'x' }] }] }, headers: {} } });
  const codec = geminiFormat.codec(geminiDialect, req, CTX, { orgId: 'o' });
  const event = (text: string, finish?: string, candidates = 1) => JSON.stringify({
    candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...(finish ? { finishReason: finish } : {}) }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: candidates },
  });

  it('the request goes upstream untouched', () => {
    expect(JSON.parse(geminiDialect.requestBody(req, 'gem-up'))).toEqual({ contents: [{ parts: [{ text: 'x' }] }] });
  });

  it('a reply is forwarded with the cost in usageMetadata', async () => {
    const r = codec.response(event('ok', 'STOP'));
    expect(r.usage).toEqual({ promptTokens: 4, completionTokens: 1, cachedTokens: 0 });
    expect(await r.render({ promptTokens: 4, completionTokens: 1 }, COST)).toMatchObject({ candidates: [{ content: { parts: [{ text: 'ok' }] } }], usageMetadata: { promptTokenCount: 4, cost_usd_total: 0.000007 } });
  });

  it('stream events are forwarded as sent; the finishing one is held and sent last with the cost', async () => {
    const s = codec.stream();
    const a = s.onEvent(undefined, event('Hel', undefined, 1));
    const b = s.onEvent(undefined, event('lo', 'STOP', 2));
    expect(a).toMatchObject({ frames: [`data: ${event('Hel', undefined, 1)}\n\n`], deliveredTokens: 1, done: false });
    expect(b).toMatchObject({ frames: [], done: true });
    const [last] = parseSseText((await s.finish({ promptTokens: 4, completionTokens: 2 }, COST)).join(''));
    expect(JSON.parse(last!.data)).toMatchObject({ candidates: [{ content: { parts: [{ text: 'lo' }] }, finishReason: 'STOP' }], usageMetadata: { cost_usd_total: 0.000007 } });
  });
});
