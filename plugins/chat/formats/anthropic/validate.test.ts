import { describe, expect, it } from 'vitest';
import { deepFreeze, expectRefusal } from '../../chat.testkit.js';
import { parseMessagesRequest } from './validate.js';

const ok = { model: 'claude-x', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
const parse = (body: unknown, headers = {}) => parseMessagesRequest(deepFreeze(body), headers);

describe('parseMessagesRequest: Anthropic request → canonical', () => {
  it.each([
    ['a minimal request', ok, { model: 'claude-x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }],
    ['system string → system message', { ...ok, system: 'Be brief.' }, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] }],
    ['system blocks → one system message', { ...ok, system: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B', cache_control: { type: 'ephemeral' } }] }, { messages: [{ role: 'system', content: 'A\nB' }, { role: 'user', content: 'hi' }] }],
    ['stop_sequences, sampling, metadata.user_id, stream', { ...ok, stop_sequences: ['X'], temperature: 0.5, top_p: 0.9, top_k: 5, metadata: { user_id: 'u' }, stream: true },
      { stop: ['X'], temperature: 0.5, top_p: 0.9, user: 'u', stream: true }],
    ['text and image blocks → parts (base64 → data URL)', {
      ...ok, messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }],
    }, {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] }],
    }],
  ])('%s', (_n, body, expected) => {
    const r = parse(body);
    expect(r.body).toMatchObject(expected);
    expect(r.body).not.toHaveProperty('top_k'); // no OpenAI equivalent: dropped from the canonical form only
    expect(r.native).toEqual({ format: 'anthropic', body, headers: {} });
  });

  it('keeps max_tokens optional (the provider enforces it), and reads stream', () => {
    const { max_tokens: _m, ...noMax } = ok;
    expect(parse({ ...noMax, stream: true })).toMatchObject({ maxTokens: undefined, stream: true, includeUsage: false });
  });

  it('keeps the version headers the client sent, for an Anthropic provider', () => {
    expect(parse(ok, { 'anthropic-version': '2026-10-21', 'anthropic-beta': 'x', 'x-api-key': 'secret' }).native?.headers)
      .toEqual({ 'anthropic-version': '2026-10-21', 'anthropic-beta': 'x' });
  });

  it('logs the system and message text as the prompt', () => {
    expect(parse({ ...ok, system: 'S', messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }] }, { role: 'assistant', content: 'b' }] }).prompt).toBe('S\na\nb');
  });

  it.each([
    ['a server tool', { tools: [{ name: 't', input_schema: {} }, { type: 'web_search_20250305', name: 'web_search' }] }, { param: 'tools[1]', name: 'web_search_20250305', kind: 'web_search' }],
    ['another server tool', { tools: [{ type: 'code_execution_20250522', name: 'code' }] }, { param: 'tools[0]', name: 'code_execution_20250522', kind: 'server_tool' }],
    ['thinking', { thinking: { type: 'enabled', budget_tokens: 2000 } }, { param: 'thinking', kind: 'thinking' }],
    ['output_config', { output_config: { effort: 'low' } }, { param: 'output_config', kind: 'output_config' }],
    ['a cache_control hint', { messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }] }] }, { param: 'messages[0].content[0].cache_control', name: 'cache_control' }],
  ])('reports %s to the unsupported_params policy, and keeps it out of the canonical body', (_n, extra, param) => {
    const r = parse({ ...ok, ...extra });
    expect(r.untranslatable).toBeUndefined();
    expect(r.unsupported).toEqual([expect.objectContaining(param)]);
    expect(JSON.stringify(r.body)).not.toMatch(/web_search|code_execution|cache_control|thinking|output_config/);
  });

  it.each([
    ['a tool_result with an image', { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: [{ type: 'image', source: {} }] }] }] }, 'messages[0].content[0].content'],
    ['a document block', { messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'document', source: {} }] }] }, 'messages[0].content[1]'],
    ['an output_config format', { output_config: { effort: 'low', format: { type: 'json_schema' } } }, 'output_config.format'],
  ])('marks %s as untranslatable (served only by an Anthropic provider)', (_n, extra, param) => {
    expect(parse({ ...ok, ...extra }).untranslatable).toMatchObject({ param });
  });

  it('client tools, tool_choice, tool_use and tool_result blocks → OpenAI tools, tool_calls and tool messages', () => {
    const r = parse({
      ...ok,
      tools: [{ name: 'weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }, { type: 'custom', name: 'now', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'toolu_2', name: 'now', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21C' }, { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'noon' }] }, { type: 'text', text: 'and?' }] },
      ],
    });
    expect(r.untranslatable).toBeUndefined();
    expect(r.body).toMatchObject({
      tools: [
        { type: 'function', function: { name: 'weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
        { type: 'function', function: { name: 'now', parameters: { type: 'object' } } },
      ],
      tool_choice: 'required', parallel_tool_calls: false,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'Checking.', tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'now', arguments: '{}' } },
        ] },
        { role: 'tool', tool_call_id: 'toolu_1', content: '21C' },
        { role: 'tool', tool_call_id: 'toolu_2', content: 'noon' },
        { role: 'user', content: [{ type: 'text', text: 'and?' }] },
      ],
    });
  });

  it.each([
    [{ type: 'auto' }, 'auto'], [{ type: 'none' }, 'none'], [{ type: 'tool', name: 'w' }, { type: 'function', function: { name: 'w' } }],
  ])('tool_choice %j → %j', (choice, expected) => {
    expect(parse({ ...ok, tools: [{ name: 'w', input_schema: {} }], tool_choice: choice }).body.tool_choice).toEqual(expected);
  });

  describe('mid-conversation system messages (Claude Code)', () => {
    const convo = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'system', content: [{ type: 'text', text: 'Now be terse.' }, { type: 'text', text: 'Really.' }] },
      { role: 'user', content: 'c' },
    ];

    it('are accepted, kept as sent for Claude, and become a system message at their place in the canonical form', () => {
      const r = parse({ ...ok, system: 'S', messages: convo });
      expect(r.untranslatable).toBeUndefined();
      expect(r.native?.body.messages).toEqual(convo);
      expect(r.body.messages).toEqual([
        { role: 'system', content: 'S' },
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'system', content: 'Now be terse.\nReally.' },
        { role: 'user', content: 'c' },
      ]);
      expect(r.prompt).toBe('S\na\nb\nNow be terse.\nReally.\nc');
    });

    it('clear_at next_user_message hides one a user turn follows (as Anthropic does), not the last one', () => {
      const hidden = { role: 'system', content: 'old hint', clear_at: 'next_user_message' };
      const last = { role: 'system', content: 'new hint', clear_at: 'next_user_message' };
      const r = parse({ ...ok, messages: [{ role: 'user', content: 'a' }, hidden, { role: 'user', content: 'b' }, last] });
      expect(r.body.messages.map((m) => m.content)).toEqual(['a', 'b', 'new hint']);
    });

    it('output_config on one is left to the unsupported_params policy', () => {
      expect(parse({ ...ok, messages: [{ role: 'user', content: 'a' }, { role: 'system', content: 'x', output_config: { effort: 'low' } }] }).unsupported)
        .toEqual([expect.objectContaining({ param: 'messages[1].output_config', kind: 'output_config' })]);
    });
  });

  it('thinking disabled is translatable', () => {
    expect(parse({ ...ok, thinking: { type: 'disabled' } }).untranslatable).toBeUndefined();
    expect(parse({ ...ok, thinking: { type: 'disabled' } }).unsupported).toEqual([]);
  });

  it('thinking and output_config.effort translate, as Claude Code sends them (issue 29)', () => {
    expect(parse({ ...ok, thinking: { type: 'enabled', budget_tokens: 6000 } })).toMatchObject({ untranslatable: undefined, reasoning: { enabled: true, budget: 6000, show: true } });
    expect(parse({ ...ok, thinking: { type: 'adaptive' }, output_config: { effort: 'high' } })).toMatchObject({ untranslatable: undefined, reasoning: { enabled: true, effort: 'high' } });
    expect(() => parse({ ...ok, thinking: { type: 'sometimes' } })).toThrow(/thinking\.type/);
  });

  it('earlier thinking blocks are left out of a translation, not refused', () => {
    const r = parse({ ...ok, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'redacted_thinking', data: 'x' }, { type: 'text', text: 'b' }] }, { role: 'user', content: 'c' }] });
    expect(r.untranslatable).toBeUndefined();
    expect(r.body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'b' }] });
  });

  it.each([
    ['not an object', [], ''],
    ['no model', { messages: ok.messages }, 'model'],
    ['empty messages', { ...ok, messages: [] }, 'messages'],
    ['a system message with an image block', { ...ok, messages: [{ role: 'user', content: 'a' }, { role: 'system', content: [{ type: 'image', source: {} }] }] }, 'messages[1].content[0]'],
    ['a system message without content', { ...ok, messages: [{ role: 'user', content: 'a' }, { role: 'system' }] }, 'messages[1].content'],
    ['an unknown role', { ...ok, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
    ['numeric content', { ...ok, messages: [{ role: 'user', content: 1 }] }, 'messages[0].content'],
    ['a block without type', { ...ok, messages: [{ role: 'user', content: [{ text: 'x' }] }] }, 'messages[0].content[0]'],
    ['a text block without text', { ...ok, messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages[0].content[0].text'],
    ['an image block without source', { ...ok, messages: [{ role: 'user', content: [{ type: 'image' }] }] }, 'messages[0].content[0].source'],
    ['system of another type', { ...ok, system: 5 }, 'system'],
    ['a system block that is not text', { ...ok, system: [{ type: 'image' }] }, 'system[0]'],
    ['max_tokens 0', { ...ok, max_tokens: 0 }, 'max_tokens'],
    ['max_tokens as a string', { ...ok, max_tokens: '5' }, 'max_tokens'],
    ['stream as a string', { ...ok, stream: 'true' }, 'stream'],
    ['stop_sequences as a string', { ...ok, stop_sequences: 'X' }, 'stop_sequences'],
    ['temperature as a string', { ...ok, temperature: 'hot' }, 'temperature'],
  ])('refuses %s with 400 naming the field', (_n, body, param) => {
    expectRefusal(() => parse(body), param);
  });
});
