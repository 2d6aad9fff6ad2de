import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

const t = useOrgGateway('acme', '5');
afterAll(async () => expectLedgerMatchesLog(t, t.orgId));

describe('chat pass-through (OpenAI dialect) with the official openai client', () => {
  it('answers a non-streamed completion, bills it exactly and logs it', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there' }] }).withResponse();
    expect(data.choices[0]?.message.content).toMatch(/simulated/i);
    const usage = data.usage as unknown as Record<string, number>;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    // gpt-4o-mini: $0.15/M in, $0.60/M out
    const expected = Math.round(usage.prompt_tokens! * 0.15 + usage.completion_tokens! * 0.6);
    expect(Math.round((usage.cost_usd_total ?? 0) * 1e6)).toBe(expected);
    expect(usage.cost_usd_total).toBeCloseTo((usage.cost_usd_input ?? 0) + (usage.cost_usd_output ?? 0), 9);
    expect(before - (await t.balance(t.orgId))).toBe(expected);
    const requestId = response.headers.get('x-request-id') ?? '';
    expect(requestId).toMatch(/^req_[A-Za-z0-9]{24}$/);
    const row = await logRow(t, requestId);
    expect(row).toMatchObject({
      orgId: t.orgId, modality: 'chat', requestedModel: 'gpt-4o-mini', usedModel: 'gpt-4o-mini', usedProvider: 'openai',
      status: 200, errorCode: null, costMicros: expected, costEstimated: false, byok: false, prompt: 'Hello there',
    });
    expect(row.attempts).toHaveLength(1);
    expect(row.durationMs).toBeGreaterThanOrEqual(0);
    expect(row.ttfbMs).not.toBeNull();
  });

  it('streams chunks and ends with a usage chunk carrying cost when include_usage is asked', async () => {
    const before = await t.balance(t.orgId);
    const stream = await t.client.chat.completions.create({
      model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Stream please [[sim:tokens=12]]' }], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage: Record<string, number> | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, number>;
    }
    expect(chunks).toBeGreaterThanOrEqual(12);
    expect(text.trim().split(/\s+/)).toHaveLength(12);
    expect(usage?.completion_tokens).toBe(12);
    const cost = Math.round((usage?.cost_usd_total ?? 0) * 1e6);
    expect(cost).toBe(Math.round(usage!.prompt_tokens! * 0.15 + 12 * 0.6));
    expect(before - (await t.balance(t.orgId))).toBe(cost);
  });

  it('streams without a usage chunk when the client did not ask, but still bills the upstream usage', async () => {
    const before = await t.balance(t.orgId);
    const stream = await t.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi [[sim:tokens=5]]' }], stream: true });
    let sawUsage = false;
    for await (const chunk of stream) if (chunk.usage) sawUsage = true;
    expect(sawUsage).toBe(false);
    const charged = before - (await t.balance(t.orgId));
    expect(charged).toBeGreaterThan(0);
    await expectLedgerMatchesLog(t, t.orgId);
  });

  it('maps an upstream error to an SDK error with the gateway code, nothing charged', async () => {
    const before = await t.balance(t.orgId);
    const err = await t.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[[sim:status=500]]' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_error');
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('pins a provider with provider/model', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'groq/llama-3.1-8b-instant', messages: [{ role: 'user', content: 'x' }] }, t.key);
    expect(r.status).toBe(200);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.usedProvider).toBe('groq');
  });

  it('names the requested model in every reply, streamed or not, when the upstream answers with its own id', async () => {
    // The pin is the requested id; the upstream (the simulator) answers with its id, llama-3.1-8b-instant.
    const model = 'groq/llama-3.1-8b-instant';
    const messages = [{ role: 'user' as const, content: 'x [[sim:tokens=4]]' }];
    const whole = await t.client.chat.completions.create({ model, messages });
    expect(whole.model).toBe(model);
    const stream = await t.client.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
    const models = new Set<string>();
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      models.add(chunk.model);
    }
    expect(chunks).toBeGreaterThanOrEqual(5);
    expect([...models]).toEqual([model]);
  });

  it('refuses a model unknown to every provider with 404 model_not_found', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'nope-1', messages: [{ role: 'user', content: 'x' }] }, t.key);
    expect(r.status).toBe(404);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error', param: 'model' });
  });
});
