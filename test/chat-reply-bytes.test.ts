import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

/*
 * Non-streamed replies forwarded as the upstream's bytes (plugins/chat/formats/reply-scan.ts):
 * replies of production size through the official SDKs, with the requested model, the
 * usage and its cost spliced in, billed to the micro-dollar; a malformed body still refused.
 */

const t = useOrgGateway('reply-bytes', '20');
let anthropic: Anthropic;
beforeAll(() => {
  anthropic = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
});
afterAll(async () => expectLedgerMatchesLog(t, t.orgId));

const TOKENS = 3000;

describe('non-streamed replies as bytes', () => {
  it('OpenAI → OpenAI: a reply of thousands of tokens keeps its text, gets the requested model and the billed cost', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.chat.completions.create({
      model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Write at length [[sim:tokens=${TOKENS}]]` }],
    }).withResponse();
    const text = data.choices[0]?.message.content ?? '';
    expect(text.length).toBeGreaterThan(10_000);
    expect(text.trim().split(/\s+/)).toHaveLength(TOKENS);
    expect(data.model).toBe('gpt-4o-mini');
    const usage = data.usage as unknown as Record<string, number>;
    expect(usage.completion_tokens).toBe(TOKENS);
    expect(usage.total_tokens).toBe((usage.prompt_tokens ?? 0) + TOKENS);
    // gpt-4o-mini: $0.15/M in, $0.60/M out; input and output each rounded to micro-USD.
    const micros = Math.round(usage.prompt_tokens! * 0.15) + Math.round(TOKENS * 0.6);
    expect(Math.round(usage.cost_usd_total! * 1e6)).toBe(micros);
    expect(Math.round((usage.cost_usd_input! + usage.cost_usd_output!) * 1e6)).toBe(micros);
    expect(before - (await t.balance(t.orgId))).toBe(micros);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 200, errorCode: null, costMicros: micros, costEstimated: false });
  });

  it('Anthropic → Anthropic: the same through /v1/messages and the Anthropic SDK', async () => {
    const before = await t.balance(t.orgId);
    const msg = await anthropic.messages.create({ model: 'claude-haiku-4-5', max_tokens: 8000, messages: [{ role: 'user', content: `Write at length [[sim:tokens=${TOKENS}]]` }] });
    const block = msg.content[0];
    const text = block?.type === 'text' ? block.text : '';
    expect(text.trim().split(/\s+/)).toHaveLength(TOKENS);
    expect(msg.model).toBe('claude-haiku-4-5');
    const usage = msg.usage as unknown as Record<string, number>;
    expect(usage.output_tokens).toBe(TOKENS);
    // claude-haiku-4-5: $1/M in, $5/M out.
    const micros = Math.round(usage.input_tokens! * 1) + TOKENS * 5;
    expect(Math.round(usage.cost_usd_total! * 1e6)).toBe(micros);
    expect(before - (await t.balance(t.orgId))).toBe(micros);
  });

  it('200 of them at once: each billed exactly (the ledger is checked against the log after all)', async () => {
    const before = await t.balance(t.orgId);
    const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => t.client.chat.completions.create({
      model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Number ${i} [[sim:tokens=400]]` }],
    })));
    let billed = 0;
    for (const r of replies) {
      expect(r.model).toBe('gpt-4o-mini');
      expect(r.usage?.completion_tokens).toBe(400);
      billed += Math.round((r.usage as unknown as { cost_usd_total: number }).cost_usd_total * 1e6);
    }
    expect(before - (await t.balance(t.orgId))).toBe(billed);
  });

  it('a malformed upstream body is still refused with 502 upstream_error', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `x [[sim:malformed]] [[sim:tokens=${TOKENS}]]` }] }, t.key);
    expect(r.status).toBe(502);
    expect((r.body as ErrorBody).error.code).toBe('upstream_error');
  });
});
