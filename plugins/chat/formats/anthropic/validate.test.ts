import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/sdk.js';
import { deepFreeze } from '../../chat.testkit.js';
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
    ['tools', { tools: [{ name: 't' }] }, 'tools'],
    ['thinking', { thinking: { type: 'enabled', budget_tokens: 2000 } }, 'thinking'],
    ['a tool_result block', { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'y' }] }] }, 'messages[0].content[0]'],
    ['a document block', { messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'document', source: {} }] }] }, 'messages[0].content[1]'],
  ])('marks %s as untranslatable (served only by an Anthropic provider)', (_n, extra, param) => {
    expect(parse({ ...ok, ...extra }).untranslatable).toMatchObject({ param });
  });

  it('thinking disabled is translatable', () => {
    expect(parse({ ...ok, thinking: { type: 'disabled' } }).untranslatable).toBeUndefined();
  });

  it.each([
    ['not an object', [], ''],
    ['no model', { messages: ok.messages }, 'model'],
    ['empty messages', { ...ok, messages: [] }, 'messages'],
    ['a system role in messages', { ...ok, messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role'],
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
    try {
      parse(body);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).status).toBe(400);
      expect((err as GatewayError).code).toBe('invalid_request');
      expect((err as GatewayError).extras.param ?? '').toBe(param);
    }
  });
});
