import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/sdk.js';
import { chunkJson, completionObject, toolCallDelta } from '../../dialects/types.js';
import { CTX, chatRequest, deepFreeze, parseSseText } from '../../chat.testkit.js';
import { finishStatus, outputFromCompletion, responsesEncoder, responseShell, responsesUsage } from './encode.js';
import { itemId, parseItemId, responseId } from './ids.js';
import { type Finalize, nativeResponsesCodec, openaiResponsesDialect } from './native.js';

const COST = { inputMicros: 3, outputMicros: 4, totalMicros: 7 };
const USAGE = { promptTokens: 10, completionTokens: 5, cachedTokens: 2, reasoningTokens: 1 };

describe('ids', () => {
  it('names the response and its items after the request, and an item id leads back to its response', () => {
    expect(responseId(CTX)).toBe('resp_test');
    expect(itemId(CTX, 'message', 0)).toBe('msg_test_0');
    expect(itemId(CTX, 'function_call', 2)).toBe('fc_test_2');
    expect(parseItemId('fc_abc_def_12')).toEqual({ responseId: 'resp_abc_def', index: 12 });
    expect(parseItemId('msg_openai123')).toBeUndefined();
  });
});

describe('canonical reply → Response', () => {
  it('usage in Responses terms with the cost fields', () => {
    expect(responsesUsage(USAGE, COST)).toEqual({
      input_tokens: 10, input_tokens_details: { cached_tokens: 2 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 15,
      cost_usd_total: 0.000007, cost_usd_input: 0.000003, cost_usd_output: 0.000004,
    });
  });

  it.each([['stop', 'completed', null], ['tool_calls', 'completed', null], ['length', 'incomplete', { reason: 'max_output_tokens' }], ['content_filter', 'incomplete', { reason: 'content_filter' }]])(
    'finish %s → status %s', (finish, status, details) => {
      expect(finishStatus(finish)).toEqual({ status, incomplete_details: details });
    });

  it('text → a message item; tool calls → function_call items after it', () => {
    const calls = [{ id: 'call_1', type: 'function' as const, function: { name: 'w', arguments: '{"a":1}' } }];
    expect(outputFromCompletion(deepFreeze(completionObject(CTX, 'Hi', 'tool_calls', undefined, calls)), 'Hi', CTX)).toEqual([
      { type: 'message', id: 'msg_test_0', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hi', annotations: [], logprobs: [] }] },
      { type: 'function_call', id: 'fc_test_1', call_id: 'call_1', name: 'w', arguments: '{"a":1}', status: 'completed' },
    ]);
    expect(outputFromCompletion(completionObject(CTX, '', 'stop', undefined), '', CTX)).toHaveLength(1);
  });

  it('the shell echoes the request with OpenAI defaults', () => {
    expect(responseShell(CTX, deepFreeze({ model: 'm', instructions: 'I', tools: [{ type: 'function', name: 'w' }] }), true)).toMatchObject({
      id: 'resp_test', object: 'response', created_at: CTX.created, model: 'asked-model', instructions: 'I', store: true, tool_choice: 'auto',
      tools: [{ type: 'function', name: 'w' }], text: { format: { type: 'text' } }, parallel_tool_calls: true, previous_response_id: null,
    });
  });
});

describe('canonical chunks → Responses events', () => {
  const shell = responseShell(CTX, { model: 'm' }, true);
  const run = (chunks: string[]) => {
    const enc = responsesEncoder(CTX, shell);
    const frames = chunks.flatMap((c) => enc.chunk(c));
    const closed = enc.close();
    const parsed = parseSseText([...frames, ...closed.frames].join('')).map((e) => ({ name: e.event, ...(JSON.parse(e.data) as Record<string, unknown>) }) as Record<string, unknown> & { name?: string });
    return { events: parsed, closed };
  };

  it('text: created, in_progress, item and part added, deltas, then done events in order, numbered', () => {
    const { events, closed } = run([chunkJson(CTX, { role: 'assistant', content: '' }, null), chunkJson(CTX, { content: 'Hel' }, null), chunkJson(CTX, { content: 'lo' }, null), chunkJson(CTX, {}, 'stop')]);
    expect(events.map((e) => e.name)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    ]);
    for (const e of events) expect(e.type).toBe(e.name);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[6]).toMatchObject({ item_id: 'msg_test_0', text: 'Hello' });
    expect(closed).toMatchObject({ finish: 'stop', output: [{ type: 'message', content: [{ text: 'Hello' }], status: 'completed' }] });
  });

  it('text then two tool calls: the message is done before the first call starts; each call streams its arguments', () => {
    const { events, closed } = run([
      chunkJson(CTX, { content: 'Checking.' }, null),
      chunkJson(CTX, toolCallDelta(0, { id: 'call_a', name: 'w', arguments: '' }), null), chunkJson(CTX, toolCallDelta(0, { arguments: '{"c":' }), null), chunkJson(CTX, toolCallDelta(0, { arguments: '1}' }), null),
      chunkJson(CTX, toolCallDelta(1, { id: 'call_b', name: 't', arguments: '{}' }), null), chunkJson(CTX, {}, 'tool_calls'),
    ]);
    const names = events.map((e) => e.name);
    expect(names.indexOf('response.output_item.done')).toBeLessThan(names.lastIndexOf('response.output_item.added'));
    expect(events.filter((e) => e.name === 'response.function_call_arguments.done').map((e) => [e.item_id, e.arguments])).toEqual([['fc_test_1', '{"c":1}'], ['fc_test_2', '{}']]);
    expect(closed.output.map((o) => [o.type, o.id, o.status])).toEqual([['message', 'msg_test_0', 'completed'], ['function_call', 'fc_test_1', 'completed'], ['function_call', 'fc_test_2', 'completed']]);
  });

  it('a broken stream ends with an error event carrying `error` (the openai SDKs raise on it)', () => {
    const enc = responsesEncoder(CTX, shell);
    const err = new GatewayError('upstream_error', ['boom']);
    const [e] = parseSseText(enc.fail(err, err.toBody()));
    expect(e?.event).toBe('error');
    expect(JSON.parse(e?.data ?? '')).toMatchObject({ type: 'error', code: 'upstream_error', error: { code: 'upstream_error' } });
  });
});

describe('OpenAI /responses as the native upstream', () => {
  it('sends the client body with the resolved input: no previous_response_id, ids stripped, reasoning dropped, store false', () => {
    const req = deepFreeze({
      ...chatRequest({ messages: [{ role: 'user', content: 'x' }] }),
      native: { format: 'responses' as const, headers: {}, body: {
        model: 'asked', previous_response_id: 'resp_1', store: true, tools: [{ type: 'web_search_preview' }],
        input: [{ type: 'message', id: 'msg_1_0', role: 'assistant', status: 'completed', content: [] }, { type: 'reasoning', id: 'rs_1' }, { type: 'function_call', id: 'fc_1_1', call_id: 'c', name: 'w', arguments: '{}' }, { type: 'mystery', id: 'x' }],
      } },
    });
    expect(JSON.parse(openaiResponsesDialect.requestBody(req, 'gpt-up'))).toEqual({
      model: 'gpt-up', store: false, tools: [{ type: 'web_search_preview' }],
      input: [{ type: 'message', role: 'assistant', content: [] }, { type: 'function_call', call_id: 'c', name: 'w', arguments: '{}' }, { type: 'mystery', id: 'x' }],
    });
    expect(openaiResponsesDialect.unsupported?.(chatRequest({ messages: [{ role: 'user', content: 'x' }] }))).toMatchObject({ param: 'model' });
  });

  const finalize: Finalize = async (r, u, c) => ({ ...r, usage: responsesUsage(u, c) });
  const codec = nativeResponsesCodec(CTX, { previous_response_id: null, store: true }, finalize, () => 'event: error\ndata: {}\n\n');
  const upstream = { id: 'resp_up', object: 'response', model: 'gpt-up', status: 'completed', output: [{ type: 'message', id: 'msg_up', content: [{ type: 'output_text', text: 'ok' }] }, { type: 'function_call', id: 'fc_up', call_id: 'c' }],
    usage: { input_tokens: 10, output_tokens: 5, input_tokens_details: { cached_tokens: 2 }, output_tokens_details: { reasoning_tokens: 1 } } };

  it('a reply gets the gateway\'s ids, the requested model and the cost', async () => {
    const r = codec.response(JSON.stringify(upstream));
    expect(r.usage).toEqual(USAGE);
    expect(r.text).toBe('ok');
    expect(await r.render(USAGE, COST)).toMatchObject({ id: 'resp_test', model: 'asked-model', output: [{ id: 'msg_test_0' }, { id: 'fc_test_1' }], usage: { cost_usd_total: 0.000007 } });
  });

  it('stream events get the gateway\'s ids everywhere; response.completed is held and sent last with the cost', async () => {
    const s = codec.stream();
    const ev = (type: string, body: object) => s.onEvent(type, JSON.stringify({ type, sequence_number: 1, ...body }));
    const created = ev('response.created', { response: { ...upstream, status: 'in_progress', output: [] } });
    const added = ev('response.output_item.added', { output_index: 0, item: { type: 'message', id: 'msg_up' } });
    const delta = ev('response.output_text.delta', { item_id: 'msg_up', output_index: 0, content_index: 0, delta: 'okay' });
    const done = ev('response.completed', { response: upstream });
    expect(JSON.parse(parseSseText(created.frames.join(''))[0]!.data)).toMatchObject({ response: { id: 'resp_test', model: 'asked-model' } });
    expect(JSON.parse(parseSseText(added.frames.join(''))[0]!.data)).toMatchObject({ item: { id: 'msg_test_0' } });
    expect(JSON.parse(parseSseText(delta.frames.join(''))[0]!.data)).toMatchObject({ item_id: 'msg_test_0' });
    expect(delta.deliveredTokens).toBe(1);
    expect(done).toMatchObject({ frames: [], done: true, usage: USAGE });
    const [last] = parseSseText((await s.finish(USAGE, COST)).join(''));
    expect(last?.event).toBe('response.completed');
    expect(JSON.parse(last!.data)).toMatchObject({ response: { id: 'resp_test', usage: { cost_usd_total: 0.000007 } } });
  });

  it.each([
    ['{"type":"error","message":"boom"}', 'boom'], ['{"type":"response.failed","response":{"error":{"message":"bad"}}}', 'bad'], ['{"type":', 'the upstream sent a malformed stream event'],
  ])('an upstream %s ends the stream with an error', (data, error) => {
    expect(codec.stream().onEvent(undefined, data)).toMatchObject({ error });
  });
});
