import { describe, expect, it } from 'vitest';
import { type ModelDef, parseUsdToPicos, type PriceKey } from '../../src/sdk.js';
import { chatCost, maxChatCostPicos, tokenCounts, usageObject } from './metering.js';
import { MEDIA_TOKEN_BOUND, promptTokenBound, TOOLS_TOKEN_BOUND } from './request.js';
import { chatRequest } from './chat.testkit.js';

function model(pricing: Partial<Record<PriceKey, string>>, extra: Partial<ModelDef> = {}): ModelDef {
  const pricePicos = Object.fromEntries(Object.entries(pricing).map(([k, v]) => [k, parseUsdToPicos(v)]));
  return { id: 'm', upstreamId: 'm', modality: 'chat', maxOutputTokens: undefined, contextLength: 0, requiresMaxTokens: false, pricing, pricePicos, pricingTiers: [], pricingVariants: {}, ...extra } as ModelDef;
}

// claude-sonnet-4-5: $3/M in, $15/M out, cache read $0.30/M, cache write $3.75/M.
const SONNET = model({ prompt: '0.000003', completion: '0.000015', input_cache_read: '0.0000003', input_cache_write: '0.00000375' });

describe('chatCost', () => {
  it.each([
    ['plain tokens', { promptTokens: 1000, completionTokens: 100 }, { inputMicros: 3000, outputMicros: 1500 }],
    ['cache reads at the read price', { promptTokens: 1000, completionTokens: 0, cachedTokens: 800 }, { inputMicros: 200 * 3 + 240, outputMicros: 0 }],
    ['cache writes at the write price, never also at the prompt price', { promptTokens: 1000, completionTokens: 0, cacheWriteTokens: 1000 }, { inputMicros: 3750, outputMicros: 0 }],
    ['reads, writes and fresh tokens together', { promptTokens: 1000, completionTokens: 10, cachedTokens: 500, cacheWriteTokens: 300 }, { inputMicros: 600 + 150 + 1125, outputMicros: 150 }],
    ['rounded half to even per part, the total their sum', { promptTokens: 1, completionTokens: 1 }, { inputMicros: 3, outputMicros: 15 }],
  ])('%s', (_n, usage, expected) => {
    const c = chatCost(SONNET, usage);
    expect(c).toEqual({ ...expected, totalMicros: expected.inputMicros + expected.outputMicros });
  });

  it('prices reasoning tokens at internal_reasoning when the model has that price, else as completion (issue 29)', () => {
    const thinker = model({ prompt: '0.000001', completion: '0.000004', internal_reasoning: '0.000008' });
    expect(chatCost(thinker, { promptTokens: 10, completionTokens: 100, reasoningTokens: 60 })).toEqual({ inputMicros: 10, outputMicros: 40 * 4 + 60 * 8, totalMicros: 10 + 40 * 4 + 60 * 8 });
    expect(chatCost(SONNET, { promptTokens: 0, completionTokens: 100, reasoningTokens: 60 }).outputMicros).toBe(1500);
    // A count above the completion tokens is never priced twice.
    expect(chatCost(thinker, { promptTokens: 0, completionTokens: 10, reasoningTokens: 50 }).outputMicros).toBe(80);
  });

  it('prices cached tokens at the prompt price when the model has no cache prices', () => {
    const plain = model({ prompt: '0.000001', completion: '0.000002' });
    expect(chatCost(plain, { promptTokens: 100, completionTokens: 0, cachedTokens: 60, cacheWriteTokens: 40 }).inputMicros).toBe(100);
  });

  it('never counts more cached tokens than prompt tokens', () => {
    expect(chatCost(SONNET, { promptTokens: 10, completionTokens: 0, cachedTokens: 50 }).inputMicros).toBe(chatCost(SONNET, { promptTokens: 10, completionTokens: 0, cachedTokens: 10 }).inputMicros);
  });

  it('prices a prompt over a tier threshold at the tier prices, input and output alike (Gemini 2.5 Pro > 200k)', () => {
    const tier = { abovePromptTokens: 200_000, pricing: {}, pricePicos: { prompt: parseUsdToPicos('0.0000025'), completion: parseUsdToPicos('0.000015') } };
    const pro = model({ prompt: '0.00000125', completion: '0.00001' }, { pricingTiers: [tier] });
    expect(chatCost(pro, { promptTokens: 200_000, completionTokens: 1000 })).toEqual({ inputMicros: 250_000, outputMicros: 10_000, totalMicros: 260_000 });
    expect(chatCost(pro, { promptTokens: 200_001, completionTokens: 1000 })).toEqual({ inputMicros: 500_002, outputMicros: 15_000, totalMicros: 515_002 }); // 500002.5 rounds half to even
    // The reservation uses the tier its prompt bound reaches.
    const small = chatRequest({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 });
    expect(maxChatCostPicos(small, pro)).toBe(BigInt(small.promptBound) * parseUsdToPicos('0.00000125') + 1000n * parseUsdToPicos('0.00001'));
    const big = chatRequest({ messages: [{ role: 'user', content: 'x'.repeat(200_100) }], max_tokens: 1000 });
    expect(maxChatCostPicos(big, pro)).toBe(BigInt(big.promptBound) * parseUsdToPicos('0.0000025') + 1000n * parseUsdToPicos('0.000015'));
  });

  it('usageObject carries spec §2.5 fields', () => {
    expect(usageObject({ promptTokens: 3, completionTokens: 4 }, { inputMicros: 1, outputMicros: 2, totalMicros: 3 })).toEqual({
      prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cost_usd_total: 0.000003, cost_usd_input: 0.000001, cost_usd_output: 0.000002,
    });
  });
});

describe('maxChatCostPicos (what is reserved)', () => {
  const req = (extra: Record<string, unknown> = {}) => chatRequest({ messages: [{ role: 'user', content: 'hi' }], ...extra });

  it('holds every prompt token at the dearest input price (cache writes) and max_tokens of output', () => {
    const r = req({ max_tokens: 100 });
    expect(maxChatCostPicos(r, SONNET)).toBe(BigInt(r.promptBound) * 3_750_000n + 100n * 15_000_000n);
  });

  it('holds output at internal_reasoning when that is dearer than completion', () => {
    const r = req({ max_tokens: 100 });
    const thinker = model({ prompt: '0.000001', completion: '0.000004', internal_reasoning: '0.000008' });
    expect(maxChatCostPicos(r, thinker)).toBe(BigInt(r.promptBound) * 1_000_000n + 100n * 8_000_000n);
  });

  it('without max_tokens: the model\'s max output, else its context length', () => {
    const r = req();
    const m = model({ prompt: '0.000001', completion: '0.000002' }, { maxOutputTokens: 500, contextLength: 9000 });
    expect(maxChatCostPicos(r, m)).toBe(BigInt(r.promptBound) * 1_000_000n + 500n * 2_000_000n);
    expect(maxChatCostPicos(r, { ...m, maxOutputTokens: undefined })).toBe(BigInt(r.promptBound) * 1_000_000n + 9000n * 2_000_000n);
  });

  it('n choices hold n completions and the prompt once', () => {
    const r = req({ max_tokens: 5, n: 128 });
    expect(r.choices).toBe(128);
    expect(maxChatCostPicos(r, SONNET)).toBe(BigInt(r.promptBound) * 3_750_000n + 128n * 5n * 15_000_000n);
    const m = model({ prompt: '0.000001', completion: '0.000002' }, { maxOutputTokens: 500 });
    expect(maxChatCostPicos(req({ n: 3 }), m)).toBe(BigInt(req({ n: 3 }).promptBound) * 1_000_000n + 3n * 500n * 2_000_000n);
  });

  it('a model that requires max_tokens, asked without it, holds only the prompt (the provider refuses the rest)', () => {
    const r = req();
    expect(maxChatCostPicos(r, { ...SONNET, requiresMaxTokens: true, maxOutputTokens: 64000 })).toBe(BigInt(r.promptBound) * 3_750_000n);
  });
});

describe('promptTokenBound', () => {
  it('bounds text by its UTF-8 bytes (JSON included) and ignores media bytes', () => {
    const text = 'héllo wörld';
    expect(promptTokenBound([[{ role: 'user', content: text }]])).toBeGreaterThanOrEqual(Buffer.byteLength(text));
    const withImage = promptTokenBound([[{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(100_000)}` } }] }]]);
    expect(withImage).toBeGreaterThanOrEqual(MEDIA_TOKEN_BOUND);
    expect(withImage).toBeLessThan(MEDIA_TOKEN_BOUND + 200);
  });

  it.each([
    ['plain text: its JSON, as is', [{ role: 'user', content: 'héllo "wörld"' }, { role: 'assistant', content: 'a \\ b' }], [{ role: 'user', content: 'héllo "wörld"' }, { role: 'assistant', content: 'a \\ b' }]],
    ['text starting with data: counts as media bytes (blanked)', [{ role: 'user', content: 'data:xyz' }], [{ role: 'user', content: '' }]],
    ['a data key is blanked', [{ role: 'user', content: 'x', data: 'abc' }], [{ role: 'user', content: 'x', data: '' }]],
    ['a file_data key is blanked', [{ role: 'user', content: [{ type: 'text', text: 'x', file_data: 'abc' }] }], [{ role: 'user', content: [{ type: 'text', text: 'x', file_data: '' }] }]],
  ])('%s: the bytes of the JSON without media, + 3', (_n, messages, counted) => {
    expect(promptTokenBound([messages, null])).toBe(Buffer.byteLength(JSON.stringify([[counted, null], null])) + 3);
  });

  it('counts tool definitions, plus the prompt a provider wraps around them', () => {
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string', description: 'x'.repeat(500) } } } } }];
    expect(promptTokenBound([[]], tools)).toBeGreaterThan(500 + TOOLS_TOKEN_BOUND);
    expect(promptTokenBound([[]], [])).toBeLessThan(20);
  });

  describe('from the JSON text of the request that holds the parts', () => {
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
    it.each([
      ['compact', (b: object) => JSON.stringify(b)],
      ['pretty-printed', (b: object) => JSON.stringify(b, null, 2)],
      ['with \\u escapes for every non-ASCII character', (b: object) => JSON.stringify(b).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)],
    ])('%s: its UTF-8 size, never below the bound of the parsed parts', (_n, serialise) => {
      const body = { model: 'm', messages: [{ role: 'user', content: 'héllo "wörld" — 東京' }], tools };
      const text = serialise(body);
      const parsed = JSON.parse(text) as typeof body;
      const bound = promptTokenBound([parsed.messages, null], parsed.tools, text);
      expect(bound).toBe(Buffer.byteLength(text) + TOOLS_TOKEN_BOUND + 3);
      expect(bound).toBeGreaterThanOrEqual(promptTokenBound([parsed.messages, null], parsed.tools));
    });

    it('a key given twice: the text holds both copies, the parse keeps the last', () => {
      const text = `{"model":"m","messages":[{"role":"user","content":"${'long '.repeat(200)}"}],"messages":[{"role":"user","content":"hi"}]}`;
      const parsed = JSON.parse(text) as { messages: unknown[] };
      expect(promptTokenBound([parsed.messages, null], null, text)).toBeGreaterThan(1000);
      expect(promptTokenBound([parsed.messages, null], null)).toBeLessThan(100);
    });

    it('a text that may hold media is bounded from the parts, media bytes left out', () => {
      const messages = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(100_000)}` } }] }];
      const text = JSON.stringify({ model: 'm', messages });
      expect(promptTokenBound([messages, null], null, text)).toBe(promptTokenBound([messages, null], null));
    });
  });
});

describe('tokenCounts', () => {
  it.each([
    ['no usage', undefined, undefined],
    ['plain', { promptTokens: 10, completionTokens: 5 }, { input: 10, output: 5, cachedInput: 0, reasoning: 0 }],
    ['cache reads and reasoning are parts of input and output', { promptTokens: 100, completionTokens: 50, cachedTokens: 60, cacheWriteTokens: 20, reasoningTokens: 30 }, { input: 100, output: 50, cachedInput: 60, reasoning: 30 }],
    ['parts never exceed their whole (a stream cut short)', { promptTokens: 10, completionTokens: 3, cachedTokens: 40, reasoningTokens: 9 }, { input: 10, output: 3, cachedInput: 10, reasoning: 3 }],
  ])('%s', (_n, usage, expected) => {
    expect(tokenCounts(usage)).toEqual(expected);
  });
});
