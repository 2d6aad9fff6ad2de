import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseUsdToPicos, picosToMicros } from '../src/lib/money.js';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, postJson, tempDir } from './harness.js';

/**
 * Reasoning across client formats × upstream dialects (issue 29), end to end with the
 * simulator: the request is served (not refused), the upstream gets the reasoning in its
 * own field, the reasoning comes back in the client's shape, and the bill is exact.
 * The simulator thinks "Thinking it over." and spends 4/8/16/32 tokens (minimal…high; 16
 * when no effort is named) on it; its answer is 8 words (8 tokens).
 */

const THOUGHT = 'Thinking it over.';
/** USD per token, written out here (not read from the YAML under test). */
const PRICES: Record<string, { prompt: string; completion: string; reasoning?: string }> = {
  'o4-mini': { prompt: '0.0000011', completion: '0.0000044' },
  'gpt-4o-mini': { prompt: '0.00000015', completion: '0.0000006' },
  'gemini-2.5-flash': { prompt: '0.0000003', completion: '0.0000025' },
  'claude-haiku-4-5': { prompt: '0.000001', completion: '0.000005' },
  'thinker-mini': { prompt: '0.000001', completion: '0.000004', reasoning: '0.000008' },
};

/** The charge in micro-USD: prompt, then completion with its reasoning part at the reasoning price when there is one. */
function expectedMicros(model: string, prompt: number, completion: number, reasoning = 0): number {
  const p = PRICES[model]!;
  const at = (usd: string, n: number): bigint => parseUsdToPicos(usd) * BigInt(n);
  const thinking = p.reasoning ? reasoning : 0;
  return picosToMicros(at(p.prompt, prompt)) + picosToMicros(at(p.completion, completion - thinking) + at(p.reasoning ?? '0', thinking));
}

const t = useOrgGateway('reasoning', '5', (sim) => {
  const dir = copyProviders(tempDir());
  // An OpenAI-dialect reasoning model whose YAML prices reasoning apart (internal_reasoning).
  writeFileSync(join(dir, 'thinker.yaml'), `id: thinker\nname: Thinker\nbase_url: ${sim.url}/thinker/v1\nauth: { header: Authorization, format: "Bearer {key}" }\n`
    + 'endpoints:\n  chat: { path: /chat/completions, dialect: openai }\nmodels:\n'
    + '  - { id: thinker-mini, upstream_id: o4-mini, modality: chat, max_tokens_param: max_completion_tokens, max_output_tokens: 100000, capabilities: { reasoning: true },\n'
    + '      pricing: { prompt: "0.000001", completion: "0.000004", internal_reasoning: "0.000008" } }\n');
  return { providersDir: dir, yaml: { providers: { thinker: { api_key: 'k' } } } };
}, { ledger: true });

/** The body the simulator received last. */
function upstreamBody(): Record<string, unknown> {
  const calls = t.sim.received();
  return JSON.parse(calls[calls.length - 1]?.body ?? '{}') as Record<string, unknown>;
}

/** The charge of the last request equals its cost field and the balance change. */
async function expectBilled(before: number, costUsd: unknown, micros: number): Promise<void> {
  expect(Math.round((costUsd as number) * 1e6)).toBe(micros);
  expect(before - (await t.balance(t.orgId))).toBe(micros);
}

const CLAUDE_CODE = { max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 6000 }, messages: [{ role: 'user', content: 'Why is the sky blue?' }] };
type Message = { content: Array<{ type: string; thinking?: string; text?: string; signature?: string }>; usage: Record<string, number> };

describe('/v1/messages with thinking (Claude Code) × every dialect', () => {
  it('o4-mini: 200, reasoning_effort from the budget, reasoning tokens billed in output_tokens', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/messages`, { ...CLAUDE_CODE, model: 'o4-mini', output_config: { effort: 'high' } }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody()).toMatchObject({ reasoning_effort: 'high', max_completion_tokens: 8000 });
    const m = r.body as Message;
    expect(m.content.map((b) => b.type)).toEqual(['text']); // OpenAI returns no reasoning text
    expect(m.usage.output_tokens).toBe(8 + 32);
    await expectBilled(before, m.usage.cost_usd_total, expectedMicros('o4-mini', m.usage.input_tokens!, 40));
  });

  it('gpt-4o-mini (no reasoning): 200, nothing about reasoning sent', async () => {
    const r = await postJson(`${t.url}/v1/messages`, { ...CLAUDE_CODE, model: 'gpt-4o-mini' }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody()).not.toHaveProperty('reasoning_effort');
    expect((r.body as Message).usage.output_tokens).toBe(8);
  });

  it('gemini-2.5-flash: thinkingConfig from the budget, the thought summary as a thinking block', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/messages`, { ...CLAUDE_CODE, model: 'gemini-2.5-flash' }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody()).toMatchObject({ generationConfig: { maxOutputTokens: 8000, thinkingConfig: { thinkingBudget: 6000, includeThoughts: true } } });
    const m = r.body as Message;
    expect(m.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature: '' });
    expect(m.content[1]).toMatchObject({ type: 'text' });
    expect(m.usage.output_tokens).toBe(8 + 16);
    await expectBilled(before, m.usage.cost_usd_total, expectedMicros('gemini-2.5-flash', m.usage.input_tokens!, 24));
  });

  it('gemini-2.5-flash streamed: a thinking block of thinking_delta events before the text', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/messages`, { ...CLAUDE_CODE, model: 'gemini-2.5-flash', thinking: { type: 'adaptive' }, stream: true }, t.key);
    // biome-ignore lint/suspicious/noExplicitAny: the test reads deep into untyped SSE event JSON (e.data.delta.thinking)
    const events = (await readSse(res)).map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, any> }));
    expect(upstreamBody()).toMatchObject({ generationConfig: { thinkingConfig: { thinkingBudget: -1, includeThoughts: true } } });
    const starts = events.filter((e) => e.event === 'content_block_start').map((e) => e.data.content_block.type);
    expect(starts).toEqual(['thinking', 'text']);
    expect(events.filter((e) => e.data.delta?.type === 'thinking_delta').map((e) => e.data.delta.thinking).join('')).toBe(THOUGHT);
    const usage = events.find((e) => e.event === 'message_delta')!.data.usage as Record<string, number>;
    expect(usage.output_tokens).toBe(24);
    await expectBilled(before, usage.cost_usd_total, expectedMicros('gemini-2.5-flash', usage.input_tokens!, 24));
  });

  it('claude-haiku-4-5 (its own format): thinking sent as written, the signed block returned whole', async () => {
    const r = await postJson(`${t.url}/v1/messages`, { ...CLAUDE_CODE, model: 'claude-haiku-4-5' }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody().thinking).toEqual(CLAUDE_CODE.thinking);
    expect((r.body as Message).content[0]).toMatchObject({ type: 'thinking', thinking: THOUGHT, signature: expect.stringMatching(/^sim-signature-/) as unknown });
  });

  it('a model that prices reasoning apart bills it at internal_reasoning, to the micro-dollar', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/messages`, { ...CLAUDE_CODE, model: 'thinker-mini' }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody()).toMatchObject({ model: 'o4-mini', reasoning_effort: 'medium' });
    const m = r.body as Message;
    const micros = expectedMicros('thinker-mini', m.usage.input_tokens!, 8 + 16, 16);
    expect(micros).not.toBe(expectedMicros('thinker-mini', m.usage.input_tokens!, 8 + 16, 0));
    await expectBilled(before, m.usage.cost_usd_total, micros);
  });
});

describe('other client formats × other dialects', () => {
  type Completion = { choices: Array<{ message: { content: string; reasoning_content?: string } }>; usage: Record<string, number> };

  it('chat completions × claude: reasoning_effort → thinking with its budget; reasoning_content back', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-haiku-4-5', max_tokens: 8000, reasoning_effort: 'high', messages: [{ role: 'user', content: 'Hi' }] }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody().thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
    const c = r.body as Completion;
    expect(c.choices[0]!.message.reasoning_content).toBe(THOUGHT);
    expect(c.usage.completion_tokens).toBe(8 + 16); // Claude's output tokens include its thinking (a budget names no effort: 16)
    await expectBilled(before, c.usage.cost_usd_total, expectedMicros('claude-haiku-4-5', c.usage.prompt_tokens!, 24));
  });

  it('chat completions × gemini streamed: reasoning_content deltas, thoughtsTokenCount as reasoning_tokens', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/chat/completions`, { model: 'gemini-2.5-flash', reasoning_effort: 'low', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }] }, t.key);
    const chunks = (await readSse(res)).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data) as Completion & { choices: Array<{ delta: { reasoning_content?: string } }> });
    expect(upstreamBody()).toMatchObject({ generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } } });
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? '').join('')).toBe(THOUGHT);
    const usage = chunks[chunks.length - 1]!.usage;
    expect(usage).toMatchObject({ completion_tokens: 8 + 16 });
    await expectBilled(before, usage.cost_usd_total, expectedMicros('gemini-2.5-flash', usage.prompt_tokens as number, 24));
  });

  it('responses × claude: reasoning.effort → thinking; the thinking as a reasoning summary item', async () => {
    const r = await postJson(`${t.url}/v1/responses`, { model: 'claude-haiku-4-5', max_output_tokens: 4000, reasoning: { effort: 'low', summary: 'auto' }, input: 'Hi', store: false }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody().thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    const out = (r.body as { output: Array<Record<string, unknown>> }).output;
    expect(out[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: THOUGHT }] });
    expect(out[1]).toMatchObject({ type: 'message' });
  });

  it('responses × gemini streamed: reasoning_summary_text deltas before the text', async () => {
    const res = await post(`${t.url}/v1/responses`, { model: 'gemini-2.5-flash', reasoning: { effort: 'medium', summary: 'auto' }, input: 'Hi', stream: true, store: false }, t.key);
    const events = await readSse(res);
    expect(upstreamBody()).toMatchObject({ generationConfig: { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } } });
    const deltas = events.filter((e) => e.event === 'response.reasoning_summary_text.delta').map((e) => (JSON.parse(e.data) as { delta: string }).delta);
    expect(deltas.join('')).toBe(THOUGHT);
    const done = JSON.parse(events.find((e) => e.event === 'response.completed')!.data) as { response: { output: Array<{ type: string }> } };
    expect(done.response.output.map((o) => o.type)).toEqual(['reasoning', 'message']);
  });

  it('gemini format × claude: thinkingConfig → thinking; the thinking as a thought part', async () => {
    const r = await postJson(`${t.url}/v1beta/models/claude-haiku-4-5:generateContent`, {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { maxOutputTokens: 4000, thinkingConfig: { thinkingBudget: 2000, includeThoughts: true } },
    }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody().thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
    const parts = (r.body as { candidates: Array<{ content: { parts: Array<Record<string, unknown>> } }> }).candidates[0]!.content.parts;
    expect(parts[0]).toEqual({ text: THOUGHT, thought: true });
  });

  it('gemini format × o4-mini: thinkingConfig → reasoning_effort; thoughtsTokenCount from reasoning_tokens', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1beta/models/o4-mini:generateContent`, {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { thinkingConfig: { thinkingBudget: 2000 } },
    }, t.key);
    expect(r.status).toBe(200);
    expect(upstreamBody()).toMatchObject({ reasoning_effort: 'low' });
    const usage = (r.body as { usageMetadata: Record<string, number> }).usageMetadata;
    expect(usage).toMatchObject({ candidatesTokenCount: 8, thoughtsTokenCount: 8 });
    await expectBilled(before, usage.cost_usd_total, expectedMicros('o4-mini', usage.promptTokenCount!, 16));
  });
});
