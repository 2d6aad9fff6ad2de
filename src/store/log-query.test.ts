import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { drivers, type DriverEnv } from './drivers.testkit.js';
import { openStore } from './index.js';
import { rawQuery } from './raw.testkit.js';
import type { LogCursor, LogFilter, LogListItem } from './log-query.js';
import type { LogRow, Org, Store } from './types.js';

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;
const MODELS = ['gpt-4o-mini', 'claude-3-5-haiku', 'text-embedding-3-small'];
const STATUSES = [200, 200, 200, 429, 502];

describe.each(drivers)('$name request-log queries', ({ setup }) => {
  let env: DriverEnv | undefined;
  let url: string;
  let store: Store;
  let org: Org;
  let stranger: Org;
  let web: string;
  let rows: LogRow[];

  /** 120 rows over 3 days, in two projects and two keys, several per millisecond (ties in created_at). */
  function fixture(keyA: string, keyB: string, defaultProject: string): LogRow[] {
    return Array.from({ length: 120 }, (_, i) => {
      const status = STATUSES[i % STATUSES.length]!;
      const inWeb = i % 4 < 2;
      return {
        requestId: `req_${String(i).padStart(4, '0')}${newId('x').slice(2, 22)}`, orgId: org.id, projectId: inWeb ? web : defaultProject,
        apiKeyId: inWeb ? keyB : keyA, modality: 'chat', requestedModel: MODELS[i % MODELS.length]!, usedModel: 'u', usedProvider: 'openai',
        status, errorCode: status === 200 ? null : 'upstream_error', costMicros: status === 200 ? 1_000 + i : 0, costEstimated: false,
        byok: false, durationMs: 10, ttfbMs: null, prompt: `p${i}`, attempts: [], extra: null,
        promptTokens: 10 + i, completionTokens: status === 200 ? 5 : null, createdAt: T0 + Math.floor(i / 4) * 3_600_000 + (i % 2),
      };
    });
  }

  beforeAll(async () => {
    env = setup();
    url = env.url('logs');
    store = openStore(url);
    org = await store.createOrg('logs org', 0, 'standard');
    stranger = await store.createOrg('other org', 0, 'standard');
    web = (await store.tenancy.createProject(org.id, 'web')).id;
    const dflt = (await store.tenancy.findProject(org.id, 'default'))!.id;
    const key = (p: string, prefix: string) => store.tenancy.createKey({ orgId: org.id, projectId: p, prefix, hash: 'a'.repeat(64), name: prefix, expiresAt: null, allowedModels: null, createdBy: null });
    const [a, b] = [await key(dflt, 'tg_keyAAAAA'), await key(web, 'tg_keyBBBBB')];
    rows = fixture(a!.id, b!.id, dflt);
    await store.insertLogs(rows);
    await store.insertLogs([{ ...rows[0]!, requestId: newId('req'), orgId: stranger.id, projectId: null, apiKeyId: null }]);
  });
  afterAll(async () => {
    await store?.close();
    await env?.teardown();
  });

  const newestFirst = (list: readonly LogRow[]): string[] =>
    [...list].sort((a, b) => b.createdAt - a.createdAt || (a.requestId < b.requestId ? 1 : -1)).map((r) => r.requestId);

  async function allPages(filter: LogFilter, limit: number): Promise<LogListItem[]> {
    const out: LogListItem[] = [];
    let cursor: LogCursor | undefined;
    for (let page = 0; page < 200; page++) {
      const got = await store.logQuery.list(filter, limit, cursor);
      out.push(...got);
      if (got.length < limit) return out;
      const last = got[got.length - 1]!;
      cursor = { createdAt: last.createdAt, requestId: last.requestId };
    }
    throw new Error('pagination did not end');
  }

  it('pages through every row of the org exactly once, newest first, whatever the page size', async () => {
    for (const limit of [1, 7, 50, 200]) {
      const got = await allPages({ orgId: org.id }, limit);
      expect(got.map((r) => r.requestId)).toEqual(newestFirst(rows));
    }
  });

  it('lists rows with the key prefix and project name, and without prompts', async () => {
    const [first] = await store.logQuery.list({ orgId: org.id, apiKeyId: rows[0]!.apiKeyId! }, 1);
    expect(first).toMatchObject({ keyPrefix: 'tg_keyBBBBB', keyName: 'tg_keyBBBBB', projectName: 'web', orgId: org.id });
    expect(first).not.toHaveProperty('prompt');
  });

  it.each<[string, Partial<LogFilter>, (r: LogRow) => boolean]>([
    ['project', { projectId: 'WEB' }, (r) => r.projectId === 'WEB'],
    ['key', { apiKeyId: 'KEY_A' }, (r) => r.apiKeyId === 'KEY_A'],
    ['model', { model: 'claude-3-5-haiku' }, (r) => r.requestedModel === 'claude-3-5-haiku'],
    ['errors', { status: 'error' }, (r) => r.status >= 400],
    ['successes', { status: 'ok' }, (r) => r.status < 400],
    ['one status', { status: 429 }, (r) => r.status === 429],
    ['a time range', { from: T0 + DAY / 2, to: T0 + DAY }, (r) => r.createdAt >= T0 + DAY / 2 && r.createdAt < T0 + DAY],
    ['several at once', { projectId: 'WEB', status: 'error', model: 'gpt-4o-mini' }, (r) => r.projectId === 'WEB' && r.status >= 400 && r.requestedModel === 'gpt-4o-mini'],
  ])('filters by %s, across pages', async (_name, raw, keep) => {
    const resolve = (v: unknown): unknown => (v === 'WEB' ? web : v === 'KEY_A' ? rows[1]!.apiKeyId : v);
    const filter = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, resolve(v)])) as Partial<LogFilter>;
    const expected = rows.filter((r) => keep({ ...r, projectId: r.projectId === web ? 'WEB' : r.projectId, apiKeyId: r.apiKeyId === rows[1]!.apiKeyId ? 'KEY_A' : r.apiKeyId }));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(rows.length);
    const got = await allPages({ orgId: org.id, ...filter }, 9);
    expect(got.map((r) => r.requestId)).toEqual(newestFirst(expected));
  });

  it("never returns another org's rows, by filter or by id", async () => {
    expect(await allPages({ orgId: stranger.id }, 50)).toHaveLength(1);
    expect(await store.logQuery.list({ orgId: stranger.id, projectId: web }, 50)).toEqual([]);
    expect(await store.logQuery.get(stranger.id, rows[0]!.requestId)).toBeUndefined();
    const detail = await store.logQuery.get(org.id, rows[0]!.requestId);
    expect(detail).toMatchObject({ requestId: rows[0]!.requestId, prompt: 'p0', projectName: 'web', keyPrefix: 'tg_keyBBBBB' });
    expect((await store.logQuery.get(org.id, `log_${rows[0]!.requestId.slice(4)}`))?.requestId).toBe(rows[0]!.requestId);
  });

  it('sums usage exactly as the rows add up, in any grouping', async () => {
    const sum = (list: readonly LogRow[]) => ({
      requests: list.length, errors: list.filter((r) => r.status >= 400).length, costMicros: list.reduce((s, r) => s + r.costMicros, 0),
      promptTokens: list.reduce((s, r) => s + (r.promptTokens ?? 0), 0), completionTokens: list.reduce((s, r) => s + (r.completionTokens ?? 0), 0),
    });
    expect(await store.logQuery.usage({ orgId: org.id }, [])).toEqual([sum(rows)]);
    const byDay = await store.logQuery.usage({ orgId: org.id }, ['day']);
    const days = [...new Set(rows.map((r) => Math.floor(r.createdAt / DAY) * DAY))];
    expect(byDay.sort((a, b) => a.day! - b.day!)).toEqual(days.sort().map((day) => ({ day, ...sum(rows.filter((r) => Math.floor(r.createdAt / DAY) * DAY === day)) })));
    const byModelProject = await store.logQuery.usage({ orgId: org.id, status: 'ok' }, ['model', 'project']);
    expect(byModelProject).toHaveLength(MODELS.length * 2);
    for (const b of byModelProject) {
      expect(b).toEqual({ model: b.model, projectId: b.projectId, ...sum(rows.filter((r) => r.status < 400 && r.requestedModel === b.model && r.projectId === b.projectId)) });
    }
    const byKey = await store.logQuery.usage({ orgId: org.id, from: T0, to: T0 + 3_600_000 }, ['key']);
    expect(byKey.reduce((s, b) => s + b.requests, 0)).toBe(4);
    expect(await store.logQuery.usage({ orgId: org.id, from: T0 + 100 * DAY }, ['day'])).toEqual([]);
  });

  it('reads whole hours from the hourly sums the triggers keep, and the ends of a range from the rows', async () => {
    const range = { orgId: org.id, from: T0 + 1_234, to: T0 + 2 * DAY + 5_678 };
    const before = await store.logQuery.usage(range, ['model']);
    const [hour] = await rawQuery<{ hour: number; model: string }>(url, 'SELECT hour, model FROM usage_hourly WHERE org_id = ? AND hour >= ? ORDER BY hour LIMIT 1', [org.id, T0 + 3_600_000]);
    await rawQuery(url, 'UPDATE usage_hourly SET requests = requests + 1000 WHERE org_id = ? AND hour = ? AND model = ?', [org.id, hour!.hour, hour!.model]);
    try {
      const after = await store.logQuery.usage(range, ['model']);
      expect(after.find((b) => b.model === hour!.model)!.requests).toBe(before.find((b) => b.model === hour!.model)!.requests + 1000);
    } finally {
      await rawQuery(url, 'UPDATE usage_hourly SET requests = requests - 1000 WHERE org_id = ? AND hour = ? AND model = ?', [org.id, hour!.hour, hour!.model]);
    }
    const buckets = await rawQuery<{ n: number }>(url, 'SELECT COUNT(*) AS n FROM usage_hourly WHERE org_id = ?', [org.id]);
    const combos = new Set(rows.map((r) => [Math.floor(r.createdAt / 3_600_000), r.projectId, r.apiKeyId, r.requestedModel].join('|')));
    expect(Number(buckets[0]?.n)).toBe(combos.size); // one row per hour, project, key and model
  });

  it('keeps the sums exact when a row is written again with other values, or its prompt is cleared', async () => {
    const sumOf = async () => (await store.logQuery.usage({ orgId: org.id }, ['project']))
      .map((b) => [b.projectId, b.requests, b.costMicros, b.promptTokens]).sort();
    const original = rows[5]!;
    const before = await sumOf();
    const moved = { ...original, projectId: web, costMicros: original.costMicros + 7, promptTokens: 999 };
    await store.insertLogs([moved]);
    const after = await sumOf();
    const delta = (list: Awaited<ReturnType<typeof sumOf>>, project: string) => list.find((b) => b[0] === project)!;
    expect(delta(after, web)[1]).toBe((delta(before, web)[1] as number) + (original.projectId === web ? 0 : 1));
    const total = (list: Awaited<ReturnType<typeof sumOf>>, i: number) => list.reduce((s, b) => s + (b[i] as number), 0);
    expect(total(after, 1)).toBe(total(before, 1));
    expect(total(after, 2)).toBe(total(before, 2) + 7);
    expect(total(after, 3)).toBe(total(before, 3) - (original.promptTokens ?? 0) + 999);
    await store.media.clearText(T0 + 100 * DAY);
    expect(await sumOf()).toEqual(after);
    await store.insertLogs([original]);
    expect(await sumOf()).toEqual(before);
  });
});
