import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../request.js';
import type { ReplyContext } from '../types.js';
import { eventStreamCodec, eventStreamDecoder } from './eventstream.js';
import { bedrockConverseDialect as d } from './index.js';

const ctx: ReplyContext = { requestedModel: 'claude-haiku-4-5', id: 'chatcmpl-x', created: 1 };
const req = (body: Record<string, unknown>, extra: Partial<ChatRequest> = {}): ChatRequest =>
  ({ model: 'm', body: { messages: [], ...body }, stream: false, includeUsage: false, maxTokens: undefined, promptBound: 1, ...extra }) as unknown as ChatRequest;

describe('bedrock-converse requests', () => {
  it('system, base64 images, tool calls and results, stops and limits', () => {
    const body = JSON.parse(d.requestBody(req({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
        { role: 'user', content: 'and?' },
      ],
      stop: 'END', temperature: 0.5,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], tool_choice: 'required',
    }, { maxTokens: 99 }), 'amazon.nova-pro-v1:0'));
    expect(body).toEqual({
      system: [{ text: 'Be brief.' }],
      messages: [
        { role: 'user', content: [{ text: 'Look' }, { image: { format: 'png', source: { bytes: 'AAAA' } } }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'c1', name: 'f', input: { a: 1 } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'c1', content: [{ text: 'done' }] } }, { text: 'and?' }] },
      ],
      inferenceConfig: { maxTokens: 99, temperature: 0.5, stopSequences: ['END'] },
      toolConfig: { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }], toolChoice: { any: {} } },
    });
    expect(d.pathVars(req({}, { stream: true }), 'a:0')).toEqual({ model: 'a:0', action: 'converse-stream' });
  });

  it('tool_choice none: no tools sent (Converse has no "none"), unless the conversation holds tool turns', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const plain = JSON.parse(d.requestBody(req({ messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: 'none' }), 'a:0'));
    expect(plain).not.toHaveProperty('toolConfig');
    const withTurns = JSON.parse(d.requestBody(req({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      ], tools, tool_choice: 'none',
    }), 'a:0'));
    expect(withTurns.toolConfig).toEqual({ tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }] });
  });

  it('refuses an image link (Converse takes bytes) and JSON mode', () => {
    expect(d.unsupported!(req({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }))?.param).toBe('messages[0].content');
    expect(d.unsupported!(req({ response_format: { type: 'json_object' } }))?.param).toBe('response_format');
  });
});

describe('bedrock-converse replies', () => {
  it('text, tool calls, stop reasons and usage with cache counts', () => {
    const r = d.response(JSON.stringify({
      output: { message: { role: 'assistant', content: [{ text: 'Hi' }, { toolUse: { toolUseId: 't1', name: 'f', input: { a: 1 } } }] } },
      stopReason: 'tool_use', usage: { inputTokens: 10, outputTokens: 4, cacheReadInputTokens: 5, cacheWriteInputTokens: 2 },
    }), ctx);
    expect(r.usage).toEqual({ promptTokens: 17, completionTokens: 4, cachedTokens: 5, cacheWriteTokens: 2 });
    expect(r.completion).toMatchObject({ choices: [{ finish_reason: 'tool_calls', message: { content: 'Hi', tool_calls: [{ id: 't1', function: { name: 'f', arguments: '{"a":1}' } }] } }] });
    for (const [reason, finish] of [['max_tokens', 'length'], ['guardrail_intervened', 'content_filter'], ['end_turn', 'stop']]) {
      expect(d.response(JSON.stringify({ output: { message: { content: [] } }, stopReason: reason }), ctx).completion).toMatchObject({ choices: [{ finish_reason: finish }] });
    }
    expect(() => d.response('{"message":"x"}', ctx)).toThrow();
  });

  it('a stream split anywhere decodes to the same events; exceptions end it; a corrupt frame throws', () => {
    const codec = eventStreamCodec();
    const frame = (type: string, body: unknown, kind = 'event') => Buffer.from(codec.encode({
      headers: { [kind === 'event' ? ':event-type' : ':exception-type']: { type: 'string', value: type }, ':message-type': { type: 'string', value: kind } },
      body: Buffer.from(JSON.stringify(body)),
    }));
    const bytes = Buffer.concat([
      frame('messageStart', { role: 'assistant' }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hé' } }),
      frame('messageStop', { stopReason: 'max_tokens' }),
      frame('metadata', { usage: { inputTokens: 3, outputTokens: 1 } }),
      frame('throttlingException', { message: 'slow down' }, 'exception'),
    ]);
    const dec = eventStreamDecoder();
    const events = [];
    for (let i = 0; i < bytes.length; i += 5) events.push(...dec.push(bytes.subarray(i, i + 5)));
    events.push(...dec.end());
    const tr = d.streamTranslator(ctx);
    const out = events.map((e) => tr.onEvent(e.event, e.data));
    expect(out[1]?.chunks[0]).toContain('"content":"Hé"');
    expect(out[2]?.chunks[0]).toContain('"finish_reason":"length"');
    expect(out[3]).toMatchObject({ done: true, usage: { promptTokens: 3, completionTokens: 1 } });
    expect(out[4]?.error).toBe('throttlingException: slow down');
    const corrupt = Buffer.from(frame('metadata', {}));
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 1) ^ 1, corrupt.length - 1);
    expect(() => eventStreamDecoder().push(corrupt)).toThrow();
    const cut = eventStreamDecoder();
    cut.push(bytes.subarray(0, 10));
    expect(() => cut.end()).toThrow(/inside a frame/);
  });
});
