import { describe, expect, it, vi } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

let clock = Date.now();
const t = useGateway({ now: () => clock });

const chatUrl = () => `${t.url}/v1/chat/completions`;
const body = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 20, ...extra });

describe('credit ledger', () => {
  it('refuses with 402 when the balance cannot cover the maximum cost, charging nothing', async () => {
    const { org, key } = await t.org('poor', '0');
    const r = await postJson(chatUrl(), body('hi'), key);
    expect(r.status).toBe(402);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'insufficient_credits', type: 'insufficient_quota' });
    expect(t.sim.calls()['POST /openai/v1/chat/completions'] ?? 0).toBe(0);
    expect(await t.balance(org.id)).toBe(0);
  });

  it('reserves the maximum (prompt bound + max_tokens) and settles to the metered cost', async () => {
    // gpt-4o-mini max cost with max_tokens 20 and a short prompt is a few micro-USD: give exactly enough for one.
    const { org, key } = await t.org('exact', '0.001');
    const r = await postJson(chatUrl(), body('hello'), key);
    expect(r.status).toBe(200);
    const usage = (r.body as { usage: Record<string, number> }).usage;
    const cost = Math.round((usage.cost_usd_total ?? 0) * 1e6);
    expect(cost).toBeGreaterThan(0);
    expect(await t.balance(org.id)).toBe(1000 - cost);
    await expectLedgerMatchesLog(t, org.id);
  });

  it('a settle that fails once (the database blinked) is settled again at the metered cost: charged once, logged once', async () => {
    const { org, key } = await t.org('blink', '1');
    const settle = vi.spyOn(t.gateway.store, 'settle').mockRejectedValueOnce(new Error('connection lost'));
    try {
      const r = await postJson(chatUrl(), body('hello'), key);
      expect(r.status).toBe(200); // the reply was already sent when the settle failed
      const cost = Math.round(((r.body as { usage: Record<string, number> }).usage.cost_usd_total ?? 0) * 1e6);
      expect(cost).toBeGreaterThan(0);
      const id = r.headers.get('x-request-id')!;
      expect(settle.mock.calls).toEqual([[id, cost], [id, cost]]); // the retry charges what the reply said, not $0
      expect((await logRow(t, id)).costMicros).toBe(cost);
      expect(await t.balance(org.id)).toBe(1_000_000 - cost);
      await expectLedgerMatchesLog(t, org.id);
    } finally {
      settle.mockRestore();
    }
  });

  it.each([
    ['5xx', '[[sim:status=503]]', 502, 'upstream_error'],
    ['429', '[[sim:status=429]]', 429, 'upstream_rate_limited'],
    ['malformed body', '[[sim:malformed]]', 502, 'upstream_error'],
  ])('a failed upstream call (%s) costs nothing', async (_n, directive, status, code) => {
    const { org, key } = await t.org(`fail-${code}-${status}-${directive.length}`, '1');
    const r = await postJson(chatUrl(), body(`x ${directive}`), key);
    expect(r.status).toBe(status);
    expect((r.body as ErrorBody).error).toMatchObject({ code, usedProvider: 'openai', requestedModel: 'gpt-4o-mini' });
    expect(await t.balance(org.id)).toBe(1_000_000);
    await expectLedgerMatchesLog(t, org.id);
  });

  it('concurrent requests never drive a balance below zero', async () => {
    // Each request reserves ~ (prompt bytes + framing) * 0.15 + 2000 * 0.6 micro-USD ≈ 1.2 mUSD; 0.005 USD covers only a few at once.
    const { org, key } = await t.org('race', '0.005');
    const results = await Promise.all(Array.from({ length: 24 }, () => postJson(chatUrl(), body('[[sim:delay_ms=50]] go', { max_tokens: 2000 }), key)));
    const ok = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 402).length;
    expect(ok + refused).toBe(24);
    expect(ok).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    const balance = await t.balance(org.id);
    expect(balance).toBeGreaterThanOrEqual(0);
    await t.gateway.log.flush();
    expect(5000 - balance).toBe(await t.gateway.store.sumCharges(org.id));
    await expectLedgerMatchesLog(t, org.id);
  });

  it("uses the org's own provider key when set: not blocked for credit, not debited, key sent upstream", async () => {
    const { org, key } = await t.org('byok', '0');
    await t.gateway.store.providerKeys.set(org.id, 'openai', 'bad-org-own-key');
    // The simulator refuses keys starting with bad-: proves the org's key (not the gateway's) went upstream.
    const refused = await postJson(chatUrl(), body('hi'), key);
    expect(refused.status).toBe(502);
    expect((refused.body as ErrorBody).error.code).toBe('upstream_unauthorized');
    await t.gateway.store.providerKeys.set(org.id, 'openai', 'org-own-key');
    clock += 1001; // org keys are cached for a second, like API keys
    const r = await postJson(chatUrl(), body('hi'), key);
    expect(r.status).toBe(200);
    expect((r.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total).toBeGreaterThan(0);
    expect(await t.balance(org.id)).toBe(0);
    expect((await logRow(t, r.headers.get('x-request-id') ?? '')).byok).toBe(true);
  });

  it('a client that disconnects before the upstream answers is charged nothing and the upstream call is cancelled', async () => {
    const { org, key } = await t.org('quitter', '1');
    const ac = new AbortController();
    const pending = fetch(chatUrl(), {
      method: 'POST', signal: ac.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body('[[sim:delay_ms=400]] slow')),
    }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    await pending;
    // The reservation is settled when the gateway notices the close; poll briefly (bounded).
    for (let i = 0; i < 50 && (await t.balance(org.id)) !== 1_000_000; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await t.balance(org.id)).toBe(1_000_000);
    await expectLedgerMatchesLog(t, org.id);
  });
});
