import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/sdk.js';
import { chunkJson, completionObject } from '../../dialects/types.js';
import { CTX, parseSseText } from '../../chat.testkit.js';
import { anthropicEncoder, anthropicUsageObject, messageFromCompletion, stopReason } from './encode.js';
import { formatAnthropicError } from './index.js';
import { nativeAnthropicCodec } from './native.js';

const COST = { inputMicros: 3, outputMicros: 4, totalMicros: 7 };
const USAGE = { promptTokens: 130, completionTokens: 7, cachedTokens: 100, cacheWriteTokens: 20 };

describe('canonical → Anthropic replies', () => {
  it.each([['stop', 'end_turn'], ['length', 'max_tokens'], ['content_filter', 'refusal'], ['tool_calls', 'tool_use'], [null, 'end_turn']])('finish %s → stop_reason %s', (f, r) => {
    expect(stopReason(f)).toBe(r);
  });

  it('usage in Anthropic terms: input_tokens exclude cache reads and writes; cost fields added', () => {
    expect(anthropicUsageObject(USAGE, COST)).toEqual({
      input_tokens: 10, cache_creation_input_tokens: 20, cache_read_input_tokens: 100, output_tokens: 7,
      cost_usd_total: 0.000007, cost_usd_input: 0.000003, cost_usd_output: 0.000004,
    });
  });

  it('a completion becomes a message', () => {
    const completion = completionObject(CTX, 'Hi', 'length', undefined);
    expect(messageFromCompletion(completion, 'Hi', CTX, USAGE, COST)).toEqual({
      id: 'msg_test', type: 'message', role: 'assistant', model: 'asked-model', content: [{ type: 'text', text: 'Hi' }],
      stop_reason: 'max_tokens', stop_sequence: null, usage: anthropicUsageObject(USAGE, COST),
    });
    expect(messageFromCompletion(completionObject(CTX, '', 'stop', undefined), '', CTX, USAGE, COST).content).toEqual([]);
  });

  it('a stream of chunks becomes the named event sequence the SDK expects', () => {
    const enc = anthropicEncoder(CTX);
    const frames = [
      ...enc.chunk(chunkJson(CTX, { role: 'assistant', content: '' }, null), { promptTokens: 5, completionTokens: 0 }),
      ...enc.chunk(chunkJson(CTX, { content: 'Hel' }, null), undefined),
      ...enc.chunk(chunkJson(CTX, { content: 'lo' }, null), undefined),
      ...enc.chunk(chunkJson(CTX, {}, 'stop'), undefined),
      ...enc.finish({ promptTokens: 5, completionTokens: 2 }, COST),
    ];
    const events = parseSseText(frames.join(''));
    expect(events.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    for (const e of events) expect((JSON.parse(e.data) as { type: string }).type).toBe(e.event); // named = type, or the SDK drops it
    expect(JSON.parse(events[0]!.data)).toMatchObject({ message: { id: 'msg_test', model: 'asked-model', role: 'assistant', content: [], usage: { input_tokens: 5, output_tokens: 0 } } });
    expect(JSON.parse(events[5]!.data)).toEqual({
      type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2, cost_usd_total: 0.000007, cost_usd_input: 0.000003, cost_usd_output: 0.000004 },
    });
  });

  it('tool calls become tool_use blocks after the text, with their arguments as input', () => {
    const calls = [{ id: 'call_1', type: 'function' as const, function: { name: 'weather', arguments: '{"city":"Paris"}' } }];
    const completion = completionObject(CTX, 'Checking.', 'tool_calls', undefined, calls);
    expect(messageFromCompletion(completion, 'Checking.', CTX, USAGE, COST)).toMatchObject({
      content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } }], stop_reason: 'tool_use',
    });
  });

  it('streamed tool-call deltas become tool_use blocks with input_json_delta, each block stopped before the next', () => {
    const enc = anthropicEncoder(CTX);
    const tc = (index: number, fn: object, id?: string) => chunkJson(CTX, { tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] }, null);
    const frames = [
      ...enc.chunk(chunkJson(CTX, { content: 'Checking.' }, null), { promptTokens: 5, completionTokens: 0 }),
      ...enc.chunk(tc(0, { name: 'weather', arguments: '' }, 'call_1'), undefined),
      ...enc.chunk(tc(0, { arguments: '{"city":' }), undefined),
      ...enc.chunk(tc(0, { arguments: '"Paris"}' }), undefined),
      ...enc.chunk(tc(1, { name: 'now', arguments: '{}' }, 'call_2'), undefined),
      ...enc.chunk(chunkJson(CTX, {}, 'tool_calls'), undefined),
      ...enc.finish({ promptTokens: 5, completionTokens: 9 }, COST),
    ];
    const events = parseSseText(frames.join('')).map((e) => JSON.parse(e.data) as Record<string, unknown>);
    expect(events.map((e) => [e.type, e.index])).toEqual([
      ['message_start', undefined], ['content_block_start', 0], ['content_block_delta', 0], ['content_block_stop', 0],
      ['content_block_start', 1], ['content_block_delta', 1], ['content_block_delta', 1], ['content_block_stop', 1],
      ['content_block_start', 2], ['content_block_delta', 2], ['content_block_stop', 2], ['message_delta', undefined], ['message_stop', undefined],
    ]);
    expect(events[4]).toMatchObject({ content_block: { type: 'tool_use', id: 'call_1', name: 'weather', input: {} } });
    expect(events[6]).toMatchObject({ delta: { type: 'input_json_delta', partial_json: '"Paris"}' } });
    expect(events[11]).toMatchObject({ delta: { stop_reason: 'tool_use' } });
  });

  it('an empty reply still starts and ends the message, with no content block', () => {
    const enc = anthropicEncoder(CTX);
    const events = parseSseText(enc.finish({ promptTokens: 5, completionTokens: 0 }, COST).join(''));
    expect(events.map((e) => e.event)).toEqual(['message_start', 'message_delta', 'message_stop']);
  });
});

describe('Anthropic error shape', () => {
  it.each([
    [new GatewayError('invalid_request', ['bad'], { param: 'messages' }), 400, { type: 'invalid_request_error', message: 'bad', code: 'invalid_request', param: 'messages' }],
    [new GatewayError('missing_api_key'), 401, { type: 'authentication_error', code: 'missing_api_key' }],
    [new GatewayError('insufficient_credits', ['1', '0']), 402, { type: 'billing_error', code: 'insufficient_credits' }],
    [new GatewayError('model_not_found', ['x']), 404, { type: 'not_found_error', code: 'model_not_found' }],
    [new GatewayError('body_too_large', [10]), 413, { type: 'request_too_large' }],
    [new GatewayError('upstream_rate_limited', ['x']), 429, { type: 'rate_limit_error' }],
    [new GatewayError('upstream_error', ['x']).withContext({ usedProvider: 'p', requestedModel: 'm' }), 502, { type: 'api_error', usedProvider: 'p', requestedModel: 'm' }],
    [new GatewayError('upstream_timeout', [5]), 504, { type: 'timeout_error' }],
    [new GatewayError('gateway_error', ['max_tokens: Field required'], { status: 400 }), 400, { type: 'invalid_request_error', code: 'gateway_error', message: 'max_tokens: Field required' }],
  ])('%s', (err, status, error) => {
    expect(err.status).toBe(status);
    expect(formatAnthropicError(err)).toEqual({ type: 'error', error: expect.objectContaining(error) as unknown });
  });
});

describe('native Anthropic codec (Anthropic in, Anthropic out)', () => {
  const codec = nativeAnthropicCodec(CTX, formatAnthropicError);

  it('forwards a message with the requested model and cost in usage', () => {
    const msg = { id: 'msg_up', type: 'message', model: 'claude-up', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }, { type: 'text', text: 'ok' }], stop_reason: 'tool_use', usage: { input_tokens: 10, output_tokens: 7, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, service_tier: 'standard' } };
    const r = codec.response(JSON.stringify(msg));
    expect(r.usage).toEqual(USAGE);
    expect(r.text).toBe('ok');
    expect(r.render(USAGE, COST)).toEqual({ ...msg, model: 'asked-model', usage: { ...msg.usage, ...anthropicUsageObject(USAGE, COST) } });
  });

  it('forwards stream events as sent, holding message_delta/message_stop for the end', async () => {
    const s = codec.stream();
    const start = JSON.stringify({ type: 'message_start', message: { id: 'msg_up', model: 'claude-up', content: [], usage: { input_tokens: 9, output_tokens: 1 } } });
    const blockStart = '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}';
    const json = '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"a\\":1}"}}';
    const steps = [
      s.onEvent('message_start', start), s.onEvent('content_block_start', blockStart), s.onEvent('content_block_delta', json),
      s.onEvent('message_delta', '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":6}}'),
      s.onEvent('message_stop', '{"type":"message_stop"}'),
    ];
    expect(JSON.parse(parseSseText(steps[0]!.frames.join(''))[0]!.data)).toMatchObject({ message: { model: 'asked-model', id: 'msg_up' } });
    expect(steps[1]!.frames).toEqual([`event: content_block_start\ndata: ${blockStart}\n\n`]);
    expect(steps[2]!.frames).toEqual([`event: content_block_delta\ndata: ${json}\n\n`]);
    expect(steps[2]!.deliveredTokens).toBe(2);
    expect(steps[3]).toMatchObject({ frames: [], usage: { promptTokens: 9, completionTokens: 6 } });
    expect(steps[4]).toMatchObject({ frames: [], done: true });
    const end = parseSseText((await s.finish({ promptTokens: 9, completionTokens: 6 }, COST)).join(''));
    expect(end.map((e) => e.event)).toEqual(['message_delta', 'message_stop']);
    expect(JSON.parse(end[0]!.data)).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 6, input_tokens: 9, cost_usd_total: 0.000007 } });
  });

  it('an upstream error event stops the stream; the failure frame is an Anthropic error event', () => {
    const s = codec.stream();
    expect(s.onEvent('error', '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}').error).toBe('Overloaded');
    const frames = parseSseText(s.fail(new GatewayError('upstream_error', ['Overloaded'])).join(''));
    expect(frames).toEqual([{ event: 'error', data: expect.stringContaining('"type":"api_error"') as unknown as string }]);
  });
});
