import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

/**
 * `n` choices cost n completions (the prompt once, as providers bill it): the credit
 * hold covers all of them, a balance that cannot is refused with 402 before any call,
 * and the charge is the full metered cost, never capped at one choice's hold.
 */
const t = useOrgGateway('many-choices', '1', {}, { ledger: true });

const ask = (n: unknown, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', n, max_tokens: 5, messages: [{ role: 'user', content: 'Hi [[sim:tokens=20]]' }], ...extra });

describe('n choices on /v1/chat/completions', () => {
  it('n=128: all choices come back and the charge is the whole metered cost', async () => {
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/chat/completions`, ask(128), t.key);
    expect(r.status).toBe(200);
    const body = r.body as { choices: unknown[]; usage: { completion_tokens: number; cost_usd_total: number } };
    expect(body.choices).toHaveLength(128);
    expect(body.usage.completion_tokens).toBe(640);
    const charged = before - (await t.balance(t.orgId));
    expect(charged).toBe(Math.round(body.usage.cost_usd_total * 1e6));
    expect(charged).toBeGreaterThanOrEqual(384); // 640 × $0.60/M, plus the prompt
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.costMicros).toBe(charged);
    expect(row.extra?.uncharged_micros).toBeUndefined();
  });

  it('n=4 streamed: billed for the four completions', async () => {
    const before = await t.balance(t.orgId);
    const res = await post(`${t.url}/v1/chat/completions`, ask(4, { stream: true, stream_options: { include_usage: true } }), t.key);
    const events = await readSse(res);
    const usage = JSON.parse(events.at(-2)?.data ?? '{}').usage as { completion_tokens: number; cost_usd_total: number };
    expect(usage.completion_tokens).toBe(20);
    expect(before - (await t.balance(t.orgId))).toBe(Math.round(usage.cost_usd_total * 1e6));
    expect((await logRow(t, res.headers.get('x-request-id') ?? '')).extra?.uncharged_micros).toBeUndefined();
  });

  it('refuses with 402, before any upstream call, an n the balance cannot hold', async () => {
    const { org, key } = await t.org(`poor-${Date.now()}`, '0.0003'); // 300 µUSD: one choice fits, 128 do not
    t.sim.resetCalls();
    const one = await postJson(`${t.url}/v1/chat/completions`, ask(1), key);
    expect(one.status).toBe(200);
    const many = await postJson(`${t.url}/v1/chat/completions`, ask(128), key);
    expect(many.status).toBe(402);
    expect((many.body as ErrorBody).error.code).toBe('insufficient_credits');
    expect(t.sim.calls()).toEqual({ 'POST /openai/v1/chat/completions': 1 });
    await expectLedgerMatchesLog(t, org.id);
  });

  it.each([0, 129, 1.5, '2', -1])('refuses n = %j with 400 naming n', async (n) => {
    const r = await postJson(`${t.url}/v1/chat/completions`, ask(n), t.key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'invalid_request', param: 'n' });
  });
});
