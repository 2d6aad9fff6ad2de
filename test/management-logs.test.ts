import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createProject } from '../src/tenancy/admin.js';
import { drivers, type DriverEnv } from '../src/store/drivers.testkit.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, postJson } from './harness.js';
import { addUser, type Api, code, type Obj, rows, signIn } from './management-helpers.js';

/**
 * The request log and usage through /api/v1, on a gateway running on each store:
 * pages without duplicates or gaps (also while traffic arrives), every filter, the
 * detail, and usage sums equal to the logs and the ledger to the micro-dollar.
 */
const HOUR = 3_600_000;
const micros = (usd: unknown): number => Math.round((usd as number) * 1e6);

interface Sent { id: string; project: string; key: string; model: string; status: number; at: number }

describe.each(drivers)('logs and usage on $name', ({ setup }) => {
  let env: DriverEnv | undefined;
  afterAll(async () => env?.teardown()); // registered first: runs after the gateway has closed
  let clock = Date.UTC(2026, 10, 10, 9);
  const t = useOrgGateway('acme', '50', () => {
    env = setup();
    return { now: () => clock, yaml: { database: { url: env.url('gw') } } };
  }, { ledger: true });
  let api: Api;
  const sent: Sent[] = [];
  const keys: Record<string, { key: string; id: string; project: string }> = {};
  const org = (): string => `/api/v1/orgs/${t.orgId}`;

  async function send(keyName: string, model: string, content: string): Promise<void> {
    const k = keys[keyName]!;
    const body = model.startsWith('text-embedding') ? { model, input: content } : { model, messages: [{ role: 'user', content }] };
    const r = await postJson(`${t.url}/v1/${model.startsWith('text-embedding') ? 'embeddings' : 'chat/completions'}`, body, k.key);
    sent.push({ id: r.headers.get('x-request-id') ?? '', project: k.project, key: k.id, model, status: r.status, at: clock });
  }

  async function traffic(rounds: number): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      await send('web', 'gpt-4o-mini', `hello ${i}`);
      await send('batch', 'gpt-4o', `batch ${i}`);
      await send('batch', 'text-embedding-3-small', `embed ${i}`);
      if (i % 3 === 0) await send('web', 'gpt-4o-mini', '[[sim:status=500]] failing');
      clock += 7 * HOUR; // several rows share a millisecond; rounds span days
    }
    await t.gateway.log.flush();
  }

  beforeAll(async () => {
    const store = t.gateway.store;
    await createProject(store, 'acme', 'batch');
    for (const [name, project] of [['web', 'default'], ['batch', 'batch']] as const) {
      const k = await createKey(store, 'acme', { project, name });
      keys[name] = { key: k.key, id: k.record.id, project: k.project.id };
    }
    await traffic(9);
    await addUser(t, 'member@acme.test', { org: 'acme', role: 'member' });
    api = await signIn(t.url, 'member@acme.test');
  });

  const newestFirst = (list: readonly Sent[]): string[] => [...list].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((s) => s.id);

  async function pages(query: string, limit: number, between?: () => Promise<void>): Promise<Obj[]> {
    const out: Obj[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const r = await api.get(`${org()}/logs?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      out.push(...rows(r));
      cursor = r.body.next_cursor as string | null;
      if (!cursor) return out;
      if (page === 0 && between) await between();
    }
    throw new Error('the pages did not end');
  }

  it('pages through every request exactly once, newest first, and new traffic does not shift the pages', async () => {
    expect(sent.length).toBeGreaterThanOrEqual(30);
    const all = await pages('', 7);
    expect(all.map((r) => r.id)).toEqual(newestFirst(sent));
    const before = [...sent];
    const during = await pages('', 10, async () => {
      clock += HOUR;
      await traffic(1);
    });
    expect(during.map((r) => r.id)).toEqual(newestFirst(before));
    expect(sent.length).toBeGreaterThan(before.length);
  });

  it('lists what a console table shows: ids, names, prefix, model, status, tokens, cost, timings', async () => {
    const [row] = rows(await api.get(`${org()}/logs?limit=1&key=${keys.web!.id}&status=ok`));
    expect(row).toEqual({
      id: expect.stringMatching(/^req_/), created_at: expect.any(String), modality: 'chat', project_id: keys.web!.project, project_name: 'default',
      key_id: keys.web!.id, key_prefix: keys.web!.key.slice(0, 11), key_name: 'web', model: 'gpt-4o-mini', used_model: expect.any(String),
      // The provider's single api_key is its one deployment, `default` (docs/routing.md).
      provider: 'openai', deployment: 'default', status: 200, error_code: null, prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number),
      cost_usd: expect.any(Number), cost_estimated: false, byok: false, duration_ms: expect.any(Number), ttfb_ms: expect.any(Number),
      cache: null, cache_age_ms: null, saved_usd: null,
    });
    expect((row!.prompt_tokens as number) + (row!.completion_tokens as number)).toBeGreaterThan(0);
  });

  it.each<[string, (s: Sent) => boolean, () => string]>([
    ['project', (s) => s.project === keys.batch!.project, () => `&project=${keys.batch!.project}`],
    ['key', (s) => s.key === keys.web!.id, () => `&key=${keys.web!.id}`],
    ['model', (s) => s.model === 'text-embedding-3-small', () => '&model=text-embedding-3-small'],
    ['errors', (s) => s.status >= 400, () => '&status=error'],
    ['one status', (s) => s.status === 502, () => '&status=502'],
    ['successes in one project', (s) => s.status < 400 && s.project === keys.web!.project, () => `&status=ok&project=${keys.web!.project}`],
    ['time', (s) => s.at >= Date.UTC(2026, 10, 11) && s.at < Date.UTC(2026, 10, 12), () => `&from=2026-11-11T00:00:00Z&to=${encodeURIComponent('2026-11-12T00:00:00.000+00:00')}`],
  ])('filters by %s, across pages', async (_name, keep, query) => {
    const expected = sent.filter(keep);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(sent.length);
    expect((await pages(query(), 4)).map((r) => r.id)).toEqual(newestFirst(expected));
  });

  it('shows one request in detail: attempts, and the prompt where the org keeps text', async () => {
    const failed = sent.find((s) => s.status === 502)!;
    const r = await api.get(`${org()}/logs/${failed.id}`);
    expect(r.body).toMatchObject({ id: failed.id, status: 502, error_code: 'upstream_error', prompt: '[[sim:status=500]] failing', prompt_retained: true, cost_usd: 0 });
    expect((r.body.attempts as Obj[]).length).toBeGreaterThan(0);
    expect((r.body.attempts as Obj[])[0]).toMatchObject({ provider: 'openai', status: 500 });
    expect((await api.get(`${org()}/logs/req_doesnotexist`)).status).toBe(404);
  });

  it('keeps no prompt text for an org whose retention is none', async () => {
    const { org: quiet, key } = await t.org('quiet', '1', 'none');
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'secret plans' }] }, key);
    const id = r.headers.get('x-request-id') ?? '';
    await addUser(t, 'owner@quiet.test', { org: 'quiet', role: 'owner' });
    const quietApi = await signIn(t.url, 'owner@quiet.test');
    await t.gateway.log.flush();
    expect((await quietApi.get(`/api/v1/orgs/${quiet.id}/logs/${id}`)).body).toMatchObject({ id, prompt: null, prompt_retained: false });
    expect((await t.gateway.store.getLog(id))?.prompt).toBeNull();
  });

  it('sums usage exactly as the logs (and the ledger) add up, grouped any way', async () => {
    const all = await pages('', 200);
    const logged = all.reduce((s, r) => s + micros(r.cost_usd), 0);
    const range = '&from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z';
    const total = await api.get(`${org()}/usage?group_by=day${range}`);
    expect(total.body.totals).toMatchObject({ requests: all.length, errors: all.filter((r) => (r.status as number) >= 400).length });
    expect(micros((total.body.totals as Obj).cost_usd)).toBe(logged);
    expect(logged).toBe(await t.gateway.store.sumCharges(t.orgId));
    expect(rows(total).reduce((s, b) => s + micros(b.cost_usd), 0)).toBe(logged);
    expect(rows(total).map((b) => b.day)).toEqual([...new Set(all.map((r) => (r.created_at as string).slice(0, 10)))].sort());

    const grouped = await api.get(`${org()}/usage?group_by=model,project${range}`);
    for (const b of rows(grouped)) {
      const mine = all.filter((r) => r.model === b.model && r.project_id === b.project_id);
      expect(b).toMatchObject({
        requests: mine.length, errors: mine.filter((r) => (r.status as number) >= 400).length,
        prompt_tokens: mine.reduce((s, r) => s + ((r.prompt_tokens as number | null) ?? 0), 0),
        completion_tokens: mine.reduce((s, r) => s + ((r.completion_tokens as number | null) ?? 0), 0),
        project_name: b.project_id === keys.batch!.project ? 'batch' : 'default',
      });
      expect(micros(b.cost_usd)).toBe(mine.reduce((s, r) => s + micros(r.cost_usd), 0));
    }
    const byKey = rows(await api.get(`${org()}/usage?group_by=key${range}`));
    expect(byKey.map((b) => b.key_name).sort()).toEqual(['batch', 'web']);
    expect(byKey.find((b) => b.key_name === 'web')?.key_prefix).toBe(keys.web!.key.slice(0, 11));
  });

  it('serves the overview: balance, 7 and 30 days, top models and projects, 30 daily points', async () => {
    const o = (await api.get(`${org()}/overview`)).body;
    const today = new Date(clock).toISOString().slice(0, 10);
    const usage = await api.get(`${org()}/usage?group_by=day&from=${new Date(Date.parse(today) - 29 * 24 * HOUR).toISOString()}&to=${new Date(Date.parse(today) + 24 * HOUR).toISOString()}`);
    expect(o.last_30_days).toEqual(usage.body.totals);
    expect(o.balance_usd).toBe((await t.balance(t.orgId)) / 1e6);
    const daily = o.daily as Obj[];
    expect(daily).toHaveLength(30);
    expect(daily[29]?.day).toBe(today);
    expect(daily.reduce((s, d) => s + (d.requests as number), 0)).toBe((o.last_30_days as Obj).requests);
    expect((o.top_models as Obj[]).map((m) => m.model)).toEqual(expect.arrayContaining(['gpt-4o', 'gpt-4o-mini']));
    expect((o.top_projects as Obj[]).map((p) => p.project_name).sort()).toEqual(['batch', 'default']);
    await expectLedgerMatchesLog(t, t.orgId);
  });

  it('refuses bad queries with 400 naming the field', async () => {
    for (const [query, param] of [
      ['/logs?cursor=bm9wZQ', 'cursor'], ['/logs?from=2026-11-12T00:00:00Z&to=2026-11-11T00:00:00Z', 'from'], ['/logs?from=yesterday', 'from'],
      ['/usage?group_by=day,day', 'group_by'], ['/usage?group_by=week', 'group_by'], ['/logs?limit=201', 'limit'], ['/logs?colour=red', 'colour'],
    ]) {
      const r = await api.get(`${org()}${query}`);
      expect(r.status, query).toBe(400);
      expect([code(r), (r.body.error as Obj).param], query).toEqual(['invalid_request', param]);
    }
  });
});
