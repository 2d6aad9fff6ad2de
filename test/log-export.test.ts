import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import { EXPORT_PAGE } from '../src/management/routes-logs-export.js';
import type { LogCursor, LogFilter } from '../src/store/log-query.js';
import { useOrgGateway } from './fixtures.js';
import { postJson } from './harness.js';
import { addUser, type Api, type Obj, rows, signIn } from './management-helpers.js';

/**
 * Export, search, latency, spend by key and user, key rename and the Overview's refusals,
 * through /api/v1 on a log of 100,000 rows (written in SQL as the benchmark does, as
 * byok rows so the ledger check holds) plus real requests through the simulator.
 */
const DAY = 86_400_000;
const N = 100_000;
const END = Math.floor(Date.now() / DAY) * DAY; // today 00:00 UTC: the rows fill the three days before
const START = END - 3 * DAY;
const micros = (text: string): number => {
  const [i, f = ''] = text.split('.');
  return Number(i) * 1_000_000 + Number(f.padEnd(6, '0'));
};

describe('log export, search and statistics', { timeout: 120_000 }, () => {
  const t = useOrgGateway('acme', '20', undefined, { ledger: true });
  let api: Api;
  let botKeyId: string;
  const org = (): string => `/api/v1/orgs/${t.orgId}`;

  beforeAll(async () => {
    await addUser(t, 'ops@acme.test', { operator: true });
    api = await signIn(t.url, 'ops@acme.test');
    const bot = await createKey(t.gateway.store, 'acme', { name: 'checkout-bot' });
    botKeyId = bot.record.id;
    const dflt = (await t.gateway.store.tenancy.listKeys(t.orgId)).find((k) => k.id !== botKeyId)!;
    const db = new Database(t.config.database.url.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    const step = Math.floor((3 * DAY) / N);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${N - 1})
      INSERT INTO request_logs (id, request_id, org_id, project_id, api_key_id, modality, requested_model, used_model, used_provider, status, error_code,
        cost_micros, cost_estimated, byok, duration_ms, ttfb_ms, prompt, attempts, extra, created_at, prompt_tokens, completion_tokens)
      SELECT 'log_x' || i, 'req_x' || substr('0000000' || i, -7, 7), '${t.orgId}', '${dflt.projectId}', CASE WHEN i % 4 = 0 THEN '${botKeyId}' ELSE '${dflt.id}' END, 'chat',
        CASE i % 2 WHEN 0 THEN 'gpt-4o-mini' ELSE 'claude-haiku-4-5' END, 'm', 'openai',
        CASE WHEN i % 50 = 0 THEN 502 WHEN i % 97 = 0 THEN 429 ELSE 200 END,
        CASE WHEN i % 50 = 0 THEN 'upstream_error' WHEN i % 97 = 0 THEN 'budget_exceeded' END,
        CASE WHEN i % 50 = 0 OR i % 97 = 0 THEN 0 ELSE 20 + i % 1000 END, 0, 1, 100 + i % 100, 10 + i % 20, NULL, '[]', NULL,
        ${START} + i * ${step}, 10, 5 FROM n`);
    db.exec(`INSERT INTO usage_hourly (org_id, hour, project_id, api_key_id, model, requests, errors, cost_micros, prompt_tokens, completion_tokens)
      SELECT org_id, (created_at / 3600000) * 3600000, project_id, api_key_id, requested_model, COUNT(*), SUM(status >= 400), SUM(cost_micros), SUM(prompt_tokens), SUM(completion_tokens)
      FROM request_logs WHERE request_id LIKE 'req_x%' GROUP BY 1, 2, 3, 4, 5
      ON CONFLICT DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors, cost_micros = cost_micros + excluded.cost_micros,
        prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens`);
    db.close();
    for (let i = 0; i < 3; i++) expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hi ${i}` }] }, t.key)).status).toBe(200);
    await t.gateway.log.flush();
  }, 120_000);

  it('exports a day as CSV that streams a page at a time, its sums equal to the usage of that day', async () => {
    const from = new Date(START + DAY).toISOString();
    const to = new Date(START + 2 * DAY).toISOString();
    const store = t.gateway.store.logQuery;
    const list = store.list.bind(store);
    const calls: number[] = [];
    store.list = async (f: LogFilter, limit: number, cursor?: LogCursor) => {
      calls.push(limit);
      return list(f, limit, cursor);
    };
    try {
      // Backpressure: the whole log (101 pages), its first chunk read and the rest left unread: the export stops reading ahead.
      const all = await fetch(`${t.url}${org()}/logs/export?format=csv`, { headers: api.headers });
      const paused = all.body!.getReader();
      await paused.read();
      await new Promise((r) => setTimeout(r, 500));
      const ahead = calls.length;
      expect(ahead).toBeLessThan(60);
      await paused.cancel();
      calls.length = 0;
      const res = await fetch(`${t.url}${org()}/logs/export?format=csv&from=${from}&to=${to}`, { headers: api.headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="tollgate-logs-org_\w+-[\d-]+\.csv"$/);
      expect(res.headers.get('content-length')).toBeNull();
      const reader = res.body!.getReader();
      const chunks: Uint8Array[] = [];
      for (;;) {
        const c = await reader.read();
        if (c.done) break;
        chunks.push(c.value);
      }
      const lines = Buffer.concat(chunks).toString('utf8').trimEnd().split('\r\n');
      const header = lines[0]!.split(',');
      expect(header.slice(0, 3)).toEqual(['id', 'created_at', 'modality']);
      const cost = header.indexOf('cost_usd');
      const body = lines.slice(1).map((l) => l.split(','));
      const usage = await api.get(`${org()}/usage?group_by=day&from=${from}&to=${to}`);
      const totals = usage.body.totals as Obj;
      expect(body.length).toBe(totals.requests);
      expect(body.length).toBeGreaterThan(30_000);
      expect(body.reduce((s, r) => s + micros(r[cost]!), 0)).toBe(Math.round((totals.cost_usd as number) * 1e6));
      expect(new Set(body.map((r) => r[0])).size).toBe(body.length);
      expect(calls.every((l) => l <= EXPORT_PAGE)).toBe(true);
      expect(calls.length).toBe(Math.ceil((body.length + 1) / EXPORT_PAGE));
    } finally {
      store.list = list;
    }
  });

  it('exports JSON lines, filtered like the list', async () => {
    const res = await fetch(`${t.url}${org()}/logs/export?format=jsonl&status=429`, { headers: api.headers });
    expect(res.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    const items = (await res.text()).trimEnd().split('\n').map((l) => JSON.parse(l) as Obj);
    expect(items.length).toBe(Array.from({ length: N }, (_, i) => i).filter((i) => i % 97 === 0 && i % 50 !== 0).length);
    expect(items.every((i) => i.status === 429 && i.error_code === 'budget_exceeded' && i.cost_micros === 0)).toBe(true);
  });

  it('searches by key name, model, error words and request-id prefix, pages by cursor', async () => {
    const bot = await api.get(`${org()}/logs?q=CHECKOUT&limit=200`);
    expect(rows(bot).length).toBe(200);
    expect(rows(bot).every((r) => r.key_id === botKeyId)).toBe(true);
    const next = await api.get(`${org()}/logs?q=checkout&limit=200&cursor=${bot.body.next_cursor as string}`);
    expect(rows(next).every((r) => r.key_id === botKeyId && (r.created_at as string) <= (rows(bot).at(-1)!.created_at as string))).toBe(true);
    const haiku = await api.get(`${org()}/logs?q=haiku&limit=50`);
    expect(rows(haiku).map((r) => r.model)).toEqual(Array(50).fill('claude-haiku-4-5'));
    const budget = await api.get(`${org()}/logs?q=budget reached&limit=50`);
    expect(rows(budget).length).toBe(50);
    expect(rows(budget).every((r) => r.error_code === 'budget_exceeded')).toBe(true);
    const prefix = await api.get(`${org()}/logs?q=req_x001234&limit=50`);
    expect(rows(prefix).map((r) => r.id)).toEqual(['req_x0012349', 'req_x0012348', 'req_x0012347', 'req_x0012346', 'req_x0012345', 'req_x0012344', 'req_x0012343', 'req_x0012342', 'req_x0012341', 'req_x0012340']);
    const nothing = await api.get(`${org()}/logs?q=zzz-no-such-thing`);
    expect(rows(nothing)).toEqual([]);
  });

  it('reads p50 and p95 latency per day, spend by key and by user, and limit refusals apart from errors', async () => {
    // One day (a third of the rows): exact. Durations are 100 + i % 100 ms, p95 194, read to two digits: 190.
    const day = await api.get(`${org()}/latency?from=${new Date(START + DAY).toISOString()}&to=${new Date(START + 2 * DAY).toISOString()}`);
    expect(day.status).toBe(200);
    const dayRows = Array.from({ length: N }, (_, i) => i).filter((i) => START + i * Math.floor((3 * DAY) / N) >= START + DAY && START + i * Math.floor((3 * DAY) / N) < START + 2 * DAY).length;
    expect([day.body.sampled, (day.body.latency as Obj).p95, (day.body.latency as Obj).count, (day.body.data as Obj[]).length]).toEqual([false, 190, dayRows, 1]);
    expect([140, 150]).toContain((day.body.latency as Obj).p50); // the day's rows start mid-cycle: the median is 149 or 150
    // TTFB is 10 + i % 20 ms: below 100 ms, exact.
    expect((day.body.ttfb as Obj).count).toBe(dayRows);
    expect([19, 20]).toContain((day.body.ttfb as Obj).p50);
    expect([28, 29]).toContain((day.body.ttfb as Obj).p95); // 10–29 ms uniform: the 95th percent falls on the edge of 28 and 29
    // Three days (100,000 rows, over 50,000): from a sample of every hour, the same percentiles.
    const lat = await api.get(`${org()}/latency?from=${new Date(START).toISOString()}&to=${new Date(END).toISOString()}`);
    expect(lat.body.sampled).toBe(true);
    expect((lat.body.latency as Obj).p95).toBe(190);
    expect([140, 150]).toContain((lat.body.latency as Obj).p50);
    expect((lat.body.latency as Obj).count).toBeGreaterThan(45_000);
    expect((lat.body.latency as Obj).count).toBeLessThan(55_000);
    expect((lat.body.data as Obj[]).length).toBe(3);
    const byKey = await api.get(`${org()}/usage?group_by=key&from=${new Date(START).toISOString()}&to=${new Date(END).toISOString()}`);
    const bot = rows(byKey).find((b) => b.key_id === botKeyId)!;
    expect([bot.key_name, bot.requests]).toEqual(['checkout-bot', N / 4]);
    const byUser = await api.get(`${org()}/usage?group_by=user&from=${new Date(START).toISOString()}&to=${new Date(END).toISOString()}`);
    expect(rows(byUser)).toEqual([expect.objectContaining({ user_id: null, user_email: null, requests: N })]);
    const o = await api.get(`${org()}/overview`);
    const refusals = Array.from({ length: N }, (_, i) => i).filter((i) => i % 97 === 0 && i % 50 !== 0).length;
    expect(o.body.errors_30_days).toEqual({ limit_refusals: refusals, upstream: N / 50, other: 0, failure_rate: (N / 50) / (N + 3) });
  });

  it('renames a key (PATCH name), audited from what to what', async () => {
    const r = await api.patch(`${org()}/keys/${botKeyId}`, { name: 'checkout-bot-v2' });
    expect([r.status, r.body.name]).toEqual([200, 'checkout-bot-v2']);
    const audit = await api.get(`${org()}/audit?target=${botKeyId}`);
    expect(rows(audit)[0]).toEqual(expect.objectContaining({ action: 'key.update_limits', before: { name: 'checkout-bot' }, after: { name: 'checkout-bot-v2' } }));
    expect((await api.patch(`${org()}/keys/${botKeyId}`, {})).status).toBe(400);
  });
});
