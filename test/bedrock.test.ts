import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SIM_AWS } from '../simulator/aws-sigv4.js';
import { useOrgGateway, useProviderGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * Amazon Bedrock through the gateway: unmodified openai, @anthropic-ai/sdk and Vercel AI
 * SDK clients on `bedrock/claude-haiku-4-5` (pinned), every request SigV4-signed and
 * checked by the simulator, streams in AWS event-stream framing, Bedrock's errors mapped
 * and never charged. The ledger equals the logged costs after every test.
 */

const t = useOrgGateway('bedrock', '5', {}, { ledger: true });
const MODEL = 'bedrock/claude-haiku-4-5';
const UPSTREAM = `/bedrock/model/${encodeURIComponent('global.anthropic.claude-haiku-4-5-20251001-v1:0')}`;
/** Bedrock's prices for Claude Haiku 4.5, in µUSD per token. */
const cost = (prompt: number, completion: number): number => prompt * 1 + completion * 5;

const bedrockCalls = (action: string): number => t.sim.calls()[`POST ${UPSTREAM}/${action}`] ?? 0;

describe('openai client → bedrock', () => {
  it('text: a signed Converse call, Bedrock usage billed at Bedrock prices', async () => {
    const before = await t.balance(t.orgId);
    const calls = bedrockCalls('converse');
    const r = await t.client.chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello [[sim:tokens=3]]' }], max_tokens: 50 });
    expect(r.choices[0]?.message.content).toBe('This is a');
    expect(r.choices[0]?.finish_reason).toBe('stop');
    expect(bedrockCalls('converse')).toBe(calls + 1);
    const sent = t.sim.received().at(-1)!;
    expect(sent.headers.authorization).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${SIM_AWS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request`));
    expect(JSON.parse(sent.body)).toMatchObject({ system: [{ text: 'Be brief.' }], inferenceConfig: { maxTokens: 50 } });
    const u = r.usage!;
    expect(u.completion_tokens).toBe(3);
    expect(before - (await t.balance(t.orgId))).toBe(cost(u.prompt_tokens, u.completion_tokens));
  });

  it('stream: event-stream frames become chat chunks, with the metadata usage', async () => {
    const before = await t.balance(t.orgId);
    const stream = await t.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi [[sim:tokens=5,chunk_bytes=7]]' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      usage = c.usage ?? usage;
    }
    expect(text).toBe('This is a simulated reply.');
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(5);
    expect(before - (await t.balance(t.orgId))).toBe(cost(usage!.prompt_tokens, 5));
  });

  it('tools: tool_calls from toolUse, and the tool message back as toolResult', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const first = await t.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools, max_tokens: 100 });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' ? call.function : undefined).toEqual({ name: 'weather', arguments: '{"city":"sim"}' });
    const second = await t.client.chat.completions.create({
      model: MODEL, tools, max_tokens: 100,
      messages: [{ role: 'user', content: 'Weather?' }, first.choices[0]!.message, { role: 'tool', tool_call_id: call!.id, content: 'sunny' }],
    });
    expect(second.choices[0]?.finish_reason).toBe('stop');
    const sent = JSON.parse(t.sim.received().at(-1)!.body) as { messages: unknown[] };
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ text: 'Weather?' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: call!.id, name: 'weather', input: { city: 'sim' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: call!.id, content: [{ text: 'sunny' }] } }] },
    ]);
  });

  it('a streamed tool call arrives as tool_call deltas', async () => {
    const stream = await t.client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], stream: true,
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    });
    let args = '';
    let name = '';
    for await (const c of stream) for (const tc of c.choices[0]?.delta.tool_calls ?? []) {
      name += tc.function?.name ?? '';
      args += tc.function?.arguments ?? '';
    }
    expect({ name, args }).toEqual({ name: 'weather', args: '{"city":"sim"}' });
  });
});

describe('other client formats → bedrock', () => {
  it('@anthropic-ai/sdk on /v1/messages: text and a stream', async () => {
    const anthropic = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hi [[sim:tokens=2]]' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'This is', citations: null }].map(({ citations: _c, ...b }) => expect.objectContaining(b)));
    expect(msg.stop_reason).toBe('end_turn');
    const stream = anthropic.messages.stream({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hi [[sim:tokens=4]]' }] });
    const final = await stream.finalMessage();
    expect(final.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toBe('This is a simulated');
    expect(final.usage.output_tokens).toBe(4);
  });

  it('Vercel AI SDK: generateText runs a tool, streamText streams', async () => {
    const openai = createOpenAI({ apiKey: t.key, baseURL: `${t.url}/v1` });
    const seen: string[] = [];
    const weather = tool({ description: 'Weather', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => { seen.push(city); return { city, t: 21 }; } });
    const r = await generateText({ model: openai.chat(MODEL), prompt: 'Weather?', tools: { weather }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    expect(seen).toEqual(['sim']);
    expect(r.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    const s = streamText({ model: openai(MODEL), prompt: 'Hi [[sim:tokens=3]]', maxOutputTokens: 100 });
    let text = '';
    for await (const d of s.textStream) text += d;
    expect(text).toBe('This is a');
  });

  it('the Gemini API format reaches it too', async () => {
    const r = await postJson(`${t.url}/v1beta/models/${MODEL}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'Hi [[sim:tokens=2]]' }] }] }, undefined, { 'x-goog-api-key': t.key });
    expect(r.status).toBe(200);
    expect((r.body as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]?.content.parts[0]?.text).toBe('This is');
  });
});

describe('Bedrock errors: mapped, uncharged', () => {
  const fails = async (directive: string, status: number, code: string): Promise<void> => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: directive }] }, t.key);
    expect({ status: r.status, code: (r.body as { error: { code: string } }).error.code }).toEqual({ status, code });
    expect(await t.balance(t.orgId)).toBe(before);
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect({ code: row.errorCode, cost: row.costMicros, provider: row.usedProvider }).toEqual({ code, cost: 0, provider: 'bedrock' });
  };

  it('ThrottlingException 429 → upstream_rate_limited', () => fails('[[sim:aws_error=ThrottlingException]]', 429, 'upstream_rate_limited'));
  it('ValidationException 400 → gateway_error 400', () => fails('[[sim:aws_error=ValidationException]]', 400, 'gateway_error'));
  it('AccessDeniedException 403 → upstream_unauthorized', () => fails('[[sim:aws_error=AccessDeniedException]]', 502, 'upstream_unauthorized'));
  it('ServiceUnavailableException → upstream_error', () => fails('[[sim:aws_error=ServiceUnavailableException]]', 502, 'upstream_error'));

  it('ModelNotReadyException (a 429) → upstream_error, and retried as one', async () => {
    const calls = bedrockCalls('converse');
    await fails('[[sim:aws_error=ModelNotReadyException]]', 502, 'upstream_error');
    expect(bedrockCalls('converse')).toBe(calls + 2);
  });
});

describe('routing', () => {
  it('claude-haiku-4-5 unpinned goes to anthropic first (file order); the pin picks bedrock', async () => {
    const plain = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] }, t.key);
    expect((await logRow(t, plain.headers.get('x-request-id')!)).usedProvider).toBe('anthropic');
    const pinned = await postJson(`${t.url}/v1/chat/completions`, { model: 'bedrock/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] }, t.key);
    expect((await logRow(t, pinned.headers.get('x-request-id')!)).usedProvider).toBe('bedrock');
  });

  it('unpinned, a failing anthropic falls back to bedrock', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'Hi [[sim@anthropic:status=503]]' }] }, t.key);
    expect(r.status).toBe(200);
    expect((await logRow(t, r.headers.get('x-request-id')!)).usedProvider).toBe('bedrock');
  });
});

describe('a wrong AWS secret', () => {
  const w = useProviderGateway('bedrock-wrong-secret', '1', 'bedrock', (sim) => ({ base_url: `${sim.url}/bedrock`, aws: { region: SIM_AWS.region, access_key_id: SIM_AWS.accessKeyId, secret_access_key: 'not-the-secret' } }));

  it('is a clear upstream_unauthorized, never charged, and the secret is in no reply', async () => {
    const before = await w.balance(w.orgId);
    const r = await postJson(`${w.url}/v1/chat/completions`, { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] }, w.key);
    expect(r.status).toBe(502);
    const error = (r.body as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('upstream_unauthorized');
    expect(error.message).toContain('signature we calculated does not match');
    expect(JSON.stringify(r.body)).not.toContain('not-the-secret');
    expect(await w.balance(w.orgId)).toBe(before);
  });
});
