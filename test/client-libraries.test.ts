import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { AIMessage, HumanMessage, ToolMessage, type AIMessageChunk } from '@langchain/core/messages';
import { tool as lcTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useOrgGateway } from './fixtures.js';

/**
 * The client libraries people already use, unmodified, pointed at the gateway: the
 * Vercel AI SDK (`openai(model)` = the Responses API, `openai.chat`, `@ai-sdk/anthropic`
 * = /v1/messages) and LangChain's ChatOpenAI with bindTools — against OpenAI, Claude
 * and Gemini models, tools included. After every test the org's ledger equals the sum
 * of its logged costs.
 */

const t = useOrgGateway('client-libraries', '10', {}, { ledger: true });
const REPLY = 'This is a simulated reply. This is a';
const MODELS = ['gpt-4o-mini', 'claude-haiku-4-5', 'gemini-2.5-flash'];

/** A tool the model calls once (the simulator calls the first declared tool), then answers its result in text. */
function weatherTool(seen: string[]) {
  return tool({
    description: 'Weather of a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      seen.push(city);
      return { city, temperature: 21 };
    },
  });
}

describe.each(MODELS)('Vercel AI SDK with %s', (model) => {
  const openai = () => createOpenAI({ apiKey: t.key, baseURL: `${t.url}/v1` });

  it('openai(model) — the Responses API — generateText runs a tool and answers its result', async () => {
    const before = await t.balance(t.orgId);
    const seen: string[] = [];
    const r = await generateText({ model: openai()(model), prompt: 'Weather in Paris?', tools: { weather: weatherTool(seen) }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    expect(seen).toEqual(['sim']);
    expect(r.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(r.text).toBe(REPLY);
    expect(r.totalUsage.outputTokens).toBeGreaterThan(0);
    expect(await t.balance(t.orgId)).toBeLessThan(before);
  });

  it('openai.responses(model) streamText with tools streams the answer after the tool step', async () => {
    const seen: string[] = [];
    const r = streamText({ model: openai().responses(model), prompt: 'Weather in Paris?', tools: { weather: weatherTool(seen) }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    let text = '';
    for await (const delta of r.textStream) text += delta;
    expect(text).toBe(REPLY);
    expect(seen).toEqual(['sim']);
    expect((await r.steps).length).toBe(2);
  });

  it('openai.chat(model) — chat completions — generateText and streamText with tools', async () => {
    const seen: string[] = [];
    const g = await generateText({ model: openai().chat(model), prompt: 'Weather?', tools: { weather: weatherTool(seen) }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    expect(g.text).toBe(REPLY);
    const s = streamText({ model: openai().chat(model), prompt: 'Weather?', tools: { weather: weatherTool(seen) }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    let text = '';
    for await (const delta of s.textStream) text += delta;
    expect(text).toBe(REPLY);
    expect(seen).toEqual(['sim', 'sim']);
  });

  it('@ai-sdk/anthropic (/v1/messages) generateText and streamText with tools', async () => {
    const anthropic = createAnthropic({ apiKey: t.key, baseURL: `${t.url}/v1` });
    const seen: string[] = [];
    const g = await generateText({ model: anthropic(model), prompt: 'Weather?', tools: { weather: weatherTool(seen) }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    expect(g.text).toBe(REPLY);
    const s = streamText({ model: anthropic(model), prompt: 'Weather?', tools: { weather: weatherTool(seen) }, stopWhen: stepCountIs(3), maxOutputTokens: 100 });
    let text = '';
    for await (const delta of s.textStream) text += delta;
    expect(text).toBe(REPLY);
    expect(seen).toEqual(['sim', 'sim']);
  });
});

describe.each(['claude-haiku-4-5', 'gemini-2.5-flash'])('LangChain ChatOpenAI.bindTools against %s', (model) => {
  const weather = lcTool(async ({ city }: { city: string }) => `21C in ${city}`, { name: 'get_weather', description: 'Weather of a city', schema: z.object({ city: z.string() }) });
  const chat = () => new ChatOpenAI({ model, apiKey: t.key, maxTokens: 100, maxRetries: 0, configuration: { baseURL: `${t.url}/v1` } });

  it('invoke returns tool_calls; the ToolMessage round trip is answered in text', async () => {
    const bound = chat().bindTools([weather]);
    const first = await bound.invoke([new HumanMessage('Weather in Paris?')]);
    expect(first.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'sim' } })]);
    const call = first.tool_calls?.[0];
    const answer = await bound.invoke([new HumanMessage('Weather in Paris?'), new AIMessage({ content: '', tool_calls: first.tool_calls }), new ToolMessage({ content: '21C', tool_call_id: call?.id ?? '' })]);
    expect(answer.content).toBe(REPLY);
  });

  it('stream gathers tool_call_chunks into the same call', async () => {
    const stream = await chat().bindTools([weather]).stream([new HumanMessage('Weather in Paris?')]);
    let whole: AIMessageChunk | undefined;
    for await (const chunk of stream) whole = whole ? whole.concat(chunk) : chunk;
    expect(whole?.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'sim' } })]);
  });
});

describe('parallel tool calls across dialects', () => {
  it.each(MODELS)('%s: two calls in one reply through chat completions, answered together', async (model) => {
    const client = new OpenAI({ apiKey: t.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const tools = ['get_weather', 'get_time'].map((name) => ({ type: 'function' as const, function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } } }));
    const first = await client.chat.completions.create({ model, max_tokens: 100, tools, messages: [{ role: 'user', content: 'Paris? [[sim:tool_calls=2]]' }] });
    const calls = first.choices[0]?.message.tool_calls ?? [];
    expect(calls.map((c) => (c.type === 'function' ? c.function.name : ''))).toEqual(['get_weather', 'get_time']);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    const second = await client.chat.completions.create({
      model, max_tokens: 100, tools,
      messages: [{ role: 'user', content: 'Paris?' }, first.choices[0]!.message, ...calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: 'ok' }))],
    });
    expect(second.choices[0]?.message.content).toBe(REPLY);
  });
});
