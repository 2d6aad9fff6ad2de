import { beforeAll, describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';
import { addUser, signIn } from './management-helpers.js';

/**
 * Issue 34 at production sizes: 200 concurrent requests of one project, each with its own
 * customer's email and card in a 16 KB conversation, streamed and not, masked and restored
 * — no request's value reaches the upstream, and no request gets another's back — and a
 * prompt near the 1 MB body limit. The fixture checks the ledger against the logs after each.
 */
const CONCURRENT = 200;
const filler = (n: number): string => 'The parcel was delayed at the depot and the customer wants a refund. '.repeat(Math.ceil(n / 70)).slice(0, n);
const cardFor = (i: number): string => {
  // A Visa-shaped number whose last digit makes Luhn hold.
  const body = `4${String(100_000_000_000_000 + i * 7919).padStart(14, '0')}`;
  let sum = 0;
  for (let j = 0; j < body.length; j++) {
    let d = Number(body[body.length - 1 - j]);
    if (j % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
};

describe('guardrails under load', { timeout: 120_000 }, () => {
  const t = useOrgGateway('guard-load', '100', {}, { ledger: true });
  let key = '';
  let owner: Awaited<ReturnType<typeof signIn>>;
  let path = '';
  beforeAll(async () => {
    await addUser(t, 'owner@load.test', { org: 'guard-load', role: 'owner' });
    owner = await signIn(t.url, 'owner@load.test');
    const project = ((await owner.get(`/api/v1/orgs/${t.orgId}/projects`)).body.data as Array<{ id: string }>)[0]?.id ?? '';
    path = `/api/v1/orgs/${t.orgId}/projects/${project}`;
    const r = await owner.patch(path, { guardrails: [{ type: 'pii', action: 'mask', restore: true }], body_logging: { mode: 'redacted', retention_days: 1, max_bytes: 1_048_576 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    key = (await owner.post(`${path}/keys`, { name: 'load' })).body.key as string;
  });

  it(`${CONCURRENT} concurrent requests: each value masked upstream and only its own restored`, async () => {
    const one = async (i: number): Promise<void> => {
      const email = `customer${i}@shop${i % 7}.example.com`;
      const card = cardFor(i);
      const content = `${filler(8000)} Refund to card ${card}, confirm to ${email}. ${filler(8000)} [[sim:echo_placeholders]]`;
      const stream = i % 2 === 0;
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content }] }),
      });
      const text = await res.text();
      expect(res.status, text.slice(0, 200)).toBe(200);
      expect(text, `request ${i}`).toContain(email);
      expect(text, `request ${i}`).toContain(card);
      expect(text).not.toMatch(/\[(EMAIL|CARD)_\d+\]/);
      // Another request's customer never appears in this reply.
      expect(text.match(/customer\d+@/g)?.every((m) => m === `customer${i}@`)).toBe(true);
      const row = await logRow(t, res.headers.get('x-request-id') ?? '');
      expect(row.prompt ?? '').not.toContain(email);
      expect(row.prompt ?? '').not.toContain(card);
      expect(row.costMicros).toBeGreaterThan(0);
    };
    await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => one(i)));
    const calls = t.sim.received().filter((c) => c.route.endsWith('/chat/completions'));
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      expect(c.body).not.toMatch(/customer\d+@/);
      expect(c.body).toContain('[EMAIL_1]');
      expect(c.body).toContain('[CARD_1]');
    }
  });

  it('masks a prompt near the 1 MB body limit, values at its start, middle and end', async () => {
    const emails = ['first@example.com', 'middle@example.com', 'last@example.com'];
    const content = `${emails[0]} ${filler(330_000)} ${emails[1]} ${filler(330_000)} ${emails[2]}`;
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }, key);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    const call = t.sim.received().at(-1)?.body ?? '';
    for (const e of emails) expect(call).not.toContain(e); // the simulator keeps the first and last 32 KiB
    expect(call).toContain('[EMAIL_1]');
    expect(call).toContain('[EMAIL_3]');
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    for (const e of emails) expect(row.prompt ?? '').not.toContain(e);
    const stored = await t.gateway.store.bodies.get(t.orgId, row.requestId);
    expect(stored?.request?.length).toBeGreaterThan(600_000);
    for (const e of emails) expect(stored?.request ?? '').not.toContain(e);
    expect(stored?.request).toContain('[EMAIL_2]');
  });

  it('refuses a webhook guardrail to a loopback or private address without webhooks.allow_private_urls (SSRF)', async () => {
    for (const url of ['http://127.0.0.1:9/check', 'http://10.1.2.3/check', 'http://[::1]/check', 'http://localhost/check']) {
      const r = await owner.patch(path, { guardrails: [{ type: 'webhook', url }] });
      expect(r.status, url).toBe(400);
      expect((r.body.error as { param: string }).param, url).toBe('guardrails[0].url');
    }
    expect((await owner.get(path)).body.guardrails).toEqual([{ type: 'pii', action: 'mask', restore: true }]);
  });
});
