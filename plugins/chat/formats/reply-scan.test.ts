import { describe, expect, it } from 'vitest';
import { type ModelDef, parseUsdToPicos } from '../../../src/sdk.js';
import { chatCost } from '../metering.js';
import { openaiDialect } from '../dialects/openai/index.js';
import { anthropicDialect } from '../dialects/anthropic/index.js';
import type { ChatRequest } from '../request.js';
import { nativeAnthropicCodec } from './anthropic/native.js';
import { openaiFormat } from './openai/index.js';
import { scanReply } from './reply-scan.js';

/** $3/M in, $15/M out, cache reads $0.30/M. */
function sampleModel(): ModelDef {
  const pricing = { prompt: '0.000003', completion: '0.000015', input_cache_read: '0.0000003' };
  const pricePicos = Object.fromEntries(Object.entries(pricing).map(([k, v]) => [k, parseUsdToPicos(v)]));
  return { id: 'm', upstreamId: 'm', modality: 'chat', maxOutputTokens: undefined, contextLength: 0, requiresMaxTokens: false, pricing, pricePicos, pricingTiers: [], pricingVariants: {} } as unknown as ModelDef;
}

const CTX = { requestedModel: 'my-model', id: 'chatcmpl-gw', created: 1 };

const completion = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'chatcmpl-up', object: 'chat.completion', created: 7, model: 'gpt-4o-mini-2024-07-18',
  choices: [{ index: 0, message: { role: 'assistant', content: 'He said "hi" \\ then \u00e9\u{1F600}\n'.repeat(200), refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1234, completion_tokens: 2048, total_tokens: 3282, prompt_tokens_details: { cached_tokens: 1024 }, completion_tokens_details: { reasoning_tokens: 0 } },
  system_fingerprint: 'fp_x', ...extra,
});

const message = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514',
  content: [{ type: 'text', text: 'long "quoted" text\n'.repeat(300) }, { type: 'tool_use', id: 't1', name: 'f', input: { a: [1, 2, { b: null }] } }],
  stop_reason: 'end_turn', stop_sequence: null,
  usage: { input_tokens: 900, output_tokens: 3000, cache_read_input_tokens: 100, cache_creation_input_tokens: 0 }, ...extra,
});

describe('scanReply', () => {
  it.each([
    ['compact', JSON.stringify(completion())],
    ['indented (Python servers)', JSON.stringify(completion(), null, 2)],
    ['numbers of every form', '{"a":-0.5e+10,"b":0,"c":12.25E-3,"model":"m","d":[true,false,null,[],{}]}'],
    ['a repeated key (the last wins, as in JSON.parse)', '{"model":"a","x":1,"model":"b"}'],
    ['text that looks like members inside strings', JSON.stringify({ s: '"model":"x","usage":{}', model: 'm' })],
  ])('%s: each top-level span is the member JSON.parse reads', (_name, text) => {
    const at = scanReply(text, ['model', 'usage', 'choices', 'a', 'd']);
    expect(at).toBeDefined();
    const parsed = JSON.parse(text) as Record<string, unknown>;
    for (const [k, [start, end]] of at ?? []) expect(JSON.parse(text.slice(start, end))).toEqual(parsed[k]);
    expect([...(at?.keys() ?? [])].sort()).toEqual(['model', 'usage', 'choices', 'a', 'd'].filter((k) => k in parsed).sort());
  });

  const body = JSON.stringify(completion());
  it.each([
    ['truncated', body.slice(0, body.length - 40)],
    ['a trailing comma', '{"model":"m","a":[1,2,],"b":1}'],
    ['a missing comma', '{"model":"m" "a":1}'],
    ['a bad escape', '{"model":"m","a":"\\x41"}'],
    ['a raw control character in a string', '{"model":"m","a":"a\u0001b"}'],
    ['a number JSON refuses', '{"model":"m","a":01}'],
    ['a bare word', '{"model":"m","a":nope}'],
    ['single quotes', "{'model':'m'}"],
    ['text after the object', `${body} x`],
    ['two objects', `${body}${body}`],
    ['an array', '[1,2]'],
    ['not JSON', 'upstream exploded'],
    ['an unclosed object', '{"model":"m","a":{"b":1}'],
    ['a bracket closing an object', '{"model":"m","a":{"b":1]}'],
    ['a key with an escape (left to the full parse)', '{"mod\\u0065l":"m"}'],
  ])('%s: not accepted', (_name, text) => {
    expect(scanReply(text, ['model'])).toBeUndefined();
  });
});

describe('non-streamed pass-through', () => {
  const model = sampleModel();
  const openai = openaiFormat.codec(openaiDialect, { stream: false } as ChatRequest, CTX, { orgId: 'o' });
  const anthropic = nativeAnthropicCodec(CTX, (err) => err.toBody());

  it.each([
    ['OpenAI, compact', openai, JSON.stringify(completion())],
    ['OpenAI, indented, with the usage first', openai, JSON.stringify({ usage: completion().usage, ...completion() }, null, 2)],
    ['OpenAI, upstream usage with extra fields', openai, JSON.stringify(completion({ usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11, extra: { x: 1 } } }))],
    ['Anthropic, compact', anthropic, JSON.stringify(message())],
    ['Anthropic, indented', anthropic, JSON.stringify(message(), null, 1)],
  ])('%s: the bytes say what the parsed reply says, with the billed cost', async (_name, codec, text) => {
    const passed = codec.passthrough?.(text);
    expect(passed).toBeDefined();
    const reference = codec.response(text);
    expect(passed?.usage).toEqual(reference.usage);
    const usage = passed?.usage ?? { promptTokens: 0, completionTokens: 0 };
    const cost = chatCost(model, usage);
    expect(cost.totalMicros).toBeGreaterThan(0);
    const out = passed?.text(usage, cost) ?? '';
    expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(await reference.render(usage, cost))));
    expect((JSON.parse(out) as { model: string }).model).toBe('my-model');
    // Only the gateway's members changed: the upstream's text of the choices / content is there byte for byte.
    const kept = text.slice(text.indexOf(text.includes('"choices"') ? '"choices"' : '"content"'), text.indexOf(text.includes('"choices"') ? '"choices"' : '"content"') + 400);
    expect(out).toContain(kept);
  });

  it.each([
    ['no usage (estimated through the full parse)', openai, JSON.stringify(completion({ usage: undefined }))],
    ['a null usage', openai, JSON.stringify(completion({ usage: null }))],
    ['no model', openai, JSON.stringify(completion({ model: undefined }))],
    ['choices not an array', openai, JSON.stringify(completion({ choices: {} }))],
    ['malformed', openai, JSON.stringify(completion()).slice(0, 100)],
    ['Anthropic content not an array', anthropic, JSON.stringify(message({ content: 'x' }))],
    ['Anthropic without usage', anthropic, JSON.stringify(message({ usage: undefined }))],
  ])('%s: left to the full parse', (_name, codec, text) => {
    expect(codec.passthrough?.(text)).toBeUndefined();
  });

  it('a usage count that is not one is refused as the full parse refuses it', () => {
    const text = JSON.stringify(completion({ usage: { prompt_tokens: -3, completion_tokens: 1 } }));
    expect(() => openai.passthrough?.(text)).toThrow(/prompt_tokens/);
    expect(() => openai.response(text)).toThrow(/prompt_tokens/);
  });

  it('a dialect other than the format\'s own offers none', () => {
    expect(openaiFormat.codec(anthropicDialect, { stream: false } as ChatRequest, CTX, { orgId: 'o' }).passthrough).toBeUndefined();
  });
});
