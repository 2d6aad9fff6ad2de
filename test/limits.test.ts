import { describe, expect, it } from 'vitest';
import { createKey, createProject } from '../src/tenancy/admin.js';
import type { ErrorBody } from '../src/lib/errors.js';
import type { LimitSpec } from '../src/model/limits.js';
import { useGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

/*
 * Limits and budgets through the real pipeline, one gateway process (the in-process
 * driver; test/limits-fleet.test.ts runs the same promises over three processes and Redis).
 * Counts are exact; no assertion depends on timing: the window is moved by the test clock
 * and concurrency is held with requests the simulator never answers.
 */
let clock = Date.UTC(2026, 10, 3, 12);
const t = useGateway({ now: () => clock });
const CHAT = 'POST /openai/v1/chat/completions';
const chatUrl = (): string => `${t.url}/v1/chat/completions`;
const body = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 20, ...extra });
const simCalls = (): number => t.sim.calls()[CHAT] ?? 0;
/** The auth cache keeps a key's row (and its limits) for 1 s of the gateway's clock. */
const expireAuthCache = (): void => void (clock += 1_001);

let orgs = 0;
async function orgWithKey(limits: LimitSpec, credits = '5', project?: { name: string; limits: LimitSpec }) {
  const name = `lim-${++orgs}`;
  const { org } = await t.org(name, credits);
  if (project) await createProject(t.gateway.store, name, project.name, project.limits);
  const { key, record } = await createKey(t.gateway.store, name, { project: project?.name, limits });
  return { org, key, record, name };
}

const errorOf = (r: { body: unknown }): ErrorBody['error'] => (r.body as ErrorBody).error;

describe('limits in one process', () => {
  it('rpm: serves exactly the limit, then 429 before any upstream call, charged nothing, logged with its code and headers', async () => {
    const { org, key } = await orgWithKey({ rpm: 5 });
    const before = simCalls();
    const replies = [];
    for (let i = 0; i < 8; i++) replies.push(await postJson(chatUrl(), body(`r${i}`), key));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(simCalls() - before).toBe(5);
    expect(replies.map((r) => r.headers.get('x-ratelimit-remaining-requests'))).toEqual(['4', '3', '2', '1', '0', '0', '0', '0']);
    for (const r of replies) {
      expect(r.headers.get('x-ratelimit-limit-requests')).toBe('5');
      expect(r.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?m?s$|^\dm\d+(\.\d+)?s$/);
      expect(r.headers.get('x-ratelimit-limit-tokens')).toBeNull();
    }
    const refused = replies[5]!;
    expect(errorOf(refused)).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(errorOf(refused).message).toMatch(/key tg_\w{8} on requests per minute: limit 5, used 5/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-should-retry')).toBe('true'); // the SDKs wait retry-after and retry
    const row = await logRow(t, refused.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 429, errorCode: 'rate_limit_exceeded', costMicros: 0, usedProvider: null });
    await expectLedgerMatchesLog(t, org.id);

    // A sliding window: 60 s later by the gateway's clock the five (admitted at one instant of it) have left.
    clock += 59_999;
    expect((await postJson(chatUrl(), body('not yet'), key)).status).toBe(429);
    clock += 1;
    const again = await postJson(chatUrl(), body('later'), key);
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-remaining-requests')).toBe('4');
  });

  it('max_concurrent: exactly N in flight, the rest refused while they run, a slot back when one ends', async () => {
    const { key } = await orgWithKey({ maxConcurrent: 2 });
    const before = simCalls();
    const aborts = [new AbortController(), new AbortController()];
    const held = aborts.map((a, i) => fetch(chatUrl(), {
      method: 'POST', signal: a.signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body(`hold ${i} [[sim:hang]]`)),
    }).catch(() => undefined));
    try {
      for (let i = 0; i < 200 && simCalls() - before < 2; i++) await new Promise((r) => setTimeout(r, 10));
      expect(simCalls() - before).toBe(2);
      const refused = await Promise.all([1, 2, 3].map((i) => postJson(chatUrl(), body(`more ${i}`), key)));
      expect(refused.map((r) => r.status)).toEqual([429, 429, 429]);
      expect(errorOf(refused[0]!).message).toMatch(/concurrent requests: limit 2, used 2/);
      expect(refused[0]!.headers.get('retry-after')).toBe('1');
      expect(simCalls() - before).toBe(2);
    } finally {
      for (const a of aborts) a.abort();
      await Promise.all(held);
    }
    const scope = { id: `key:${(await t.gateway.store.findApiKey(key.slice(0, 11)))!.id}`, limits: { maxConcurrent: 2 } };
    for (let i = 0; i < 200 && (await t.gateway.limiter.usage(scope)).concurrency?.used !== 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await postJson(chatUrl(), body('after'), key)).status).toBe(200);
  });

  it('tpm: reserves the token bound, keeps the metered count after the request, refuses once they would pass the limit', async () => {
    const tpm = 200; // above the bound of one request (a bound above the limit is capped at it)
    const { org, key } = await orgWithKey({ tpm });
    const first = await postJson(chatUrl(), body('tokens [[sim:tokens=5]]'), key);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe(String(tpm));
    const bound = tpm - Number(first.headers.get('x-ratelimit-remaining-tokens'));
    const used = (r: { body: unknown }): number => (r.body as { usage: { total_tokens: number } }).usage.total_tokens;
    expect(bound).toBeGreaterThan(used(first)); // the bound (prompt bound + max_tokens 20) is above the metered count (5 completion tokens)
    // The prompt bound is the size of the body's JSON as sent (+ 3), not of the messages serialised again.
    expect(bound).toBe(Buffer.byteLength(JSON.stringify(body('tokens [[sim:tokens=5]]'))) + 3 + 20);
    let counted = used(first);
    for (let i = 0; i < 20; i++) {
      const r = await postJson(chatUrl(), body('tokens [[sim:tokens=5]]'), key);
      if (counted + bound > tpm) {
        expect(r.status).toBe(429);
        expect(errorOf(r).message).toMatch(new RegExp(`tokens per minute: limit ${tpm}, used ${counted}, requested ${bound}`));
        break;
      }
      expect(r.status).toBe(200);
      // Remaining counts the earlier requests at their metered tokens and this one at its bound.
      expect(Number(r.headers.get('x-ratelimit-remaining-tokens'))).toBe(tpm - counted - bound);
      counted += used(r);
    }
    expect(counted + bound).toBeGreaterThan(tpm);
    await expectLedgerMatchesLog(t, org.id);
  });

  it('a budget is never overshot by concurrent requests; refusals are budget_exceeded and cost nothing', async () => {
    // A $0.0001 budget; each request may cost up to ~15 µUSD, so only a few fit at once.
    const { org, key, record } = await orgWithKey({ budget: { micros: 100, period: 'month' } });
    const before = await t.balance(org.id);
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => postJson(chatUrl(), body(`b${i} [[sim:tokens=20]]`), key)));
    const served = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    expect(served.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(errorOf(r)).toMatchObject({ code: 'budget_exceeded', type: 'insufficient_quota' });
    }
    await t.gateway.log.flush();
    const spent = await t.gateway.store.limits.spentSince(`key:${record.id}`, 0);
    expect(spent).toBeLessThanOrEqual(100);
    expect(spent).toBeGreaterThan(0);
    expect(before - (await t.balance(org.id))).toBe(spent);
    await expectLedgerMatchesLog(t, org.id);
    const usage = await t.gateway.limiter.usage({ id: `key:${record.id}`, limits: record.limits });
    expect(usage.budget).toMatchObject({ limitMicros: 100, spentMicros: spent, heldMicros: 0, period: 'month', resetsAt: Date.UTC(2026, 11, 1) });
  });

  it('a project limit is shared by its keys, and the tighter scope is the one the headers report', async () => {
    const { key: a, name, record } = await orgWithKey({ rpm: 3 }, '5', { name: 'shared', limits: { rpm: 4 } });
    const { key: b } = await createKey(t.gateway.store, name, { project: 'shared' });
    const statuses: number[] = [];
    const first = await postJson(chatUrl(), body('p0'), a);
    statuses.push(first.status);
    // Key a: 3 left of its own 4… no: key rpm 3 → 2 left, project 4 → 3 left: the key's window is the tighter.
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('3');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('2');
    for (const k of [b, b, a, b, a]) statuses.push((await postJson(chatUrl(), body('p'), k)).status);
    // Served: a, b, b, a (project at 4); then b and a are refused by the project.
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    const refused = await postJson(chatUrl(), body('p'), b);
    expect(errorOf(refused).message).toMatch(/project shared on requests per minute: limit 4, used 4/);
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('4');
    expect(record.projectId).not.toBe('');
  });

  it('streams carry the headers too', async () => {
    const { key } = await orgWithKey({ rpm: 10, tpm: 10_000 });
    const res = await fetch(chatUrl(), {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body('stream me', { stream: true })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('9');
    expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('10000');
    expect(await res.text()).toContain('[DONE]');
  });

  it('a budget set after spending counts the spend already logged this period', async () => {
    const { key, record, org } = await orgWithKey({});
    for (let i = 0; i < 3; i++) expect((await postJson(chatUrl(), body(`s${i} [[sim:tokens=20]]`), key)).status).toBe(200);
    await t.gateway.log.flush();
    const spent = await t.gateway.store.limits.spentSince(`key:${record.id}`, Date.UTC(2026, 10, 3));
    expect(spent).toBeGreaterThan(0);
    // Room for less than one more request's bound: the next one is refused, though the key alone never reserved anything.
    await t.gateway.store.limits.setKeyLimits(org.id, record.id, { budget: { micros: spent + 1, period: 'day' } });
    expireAuthCache();
    const r = await postJson(chatUrl(), body('over [[sim:tokens=20]]'), key);
    expect(r.status).toBe(429);
    expect(errorOf(r).code).toBe('budget_exceeded');
    expect(errorOf(r).message).toMatch(/\$0\.000001 of the daily budget/);
    expect(errorOf(r).message).toMatch(/it resets in .*, at 2026-11-04T00:00:00.000Z/);
    expect(r.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(3600);
  });

  it('a key and project without limits get no x-ratelimit headers', async () => {
    const { key } = await orgWithKey({});
    const r = await postJson(chatUrl(), body('free'), key);
    expect(r.status).toBe(200);
    expect([...r.headers.keys()].filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
  });
});

describe('limit metrics', () => {
  const m = useGateway({ yaml: { metrics: { port: 0 } } });

  it('counts each refusal by the kind of limit and the kind of scope that refused it', async () => {
    const { org } = await m.org('metered', '5');
    await createProject(m.gateway.store, 'metered', 'tight', { rpm: 1 });
    const { key: byKey } = await createKey(m.gateway.store, 'metered', { limits: { rpm: 1 } });
    const { key: byProject } = await createKey(m.gateway.store, 'metered', { project: 'tight' });
    const url = `${m.url}/v1/chat/completions`;
    for (const key of [byKey, byKey, byKey, byProject, byProject]) await postJson(url, body('m'), key);
    const text = await (await fetch(m.gateway.metricsUrl!)).text();
    expect(text).toMatch(/^tollgate_ratelimit_rejections_total\{kind="rpm",scope="key"\} 2$/m);
    expect(text).toMatch(/^tollgate_ratelimit_rejections_total\{kind="rpm",scope="project"\} 1$/m);
    expect(text).toContain('# TYPE tollgate_limits_degraded_total counter');
    await expectLedgerMatchesLog(m, org.id);
  });
});
