import { beforeAll, describe, expect, it, vi } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { postJson } from './harness.js';
import { addUser, type Api, code, type Obj, rows, signIn } from './management-helpers.js';

/** `limits` on keys and projects through /api/v1: the console's JSON shape, PATCH, current usage, roles. */
let clock = Date.UTC(2026, 10, 3, 12);
const t = useOrgGateway('acme', '10', { now: () => clock }, { ledger: true });
let owner: Api;
let member: Api;
const org = (): string => `/api/v1/orgs/${t.orgId}`;
const chat = (key: string, content = 'hi') => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 20 }, key);

beforeAll(async () => {
  await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  await addUser(t, 'member@acme.test', { org: 'acme', role: 'member' });
  owner = await signIn(t.url, 'owner@acme.test');
  member = await signIn(t.url, 'member@acme.test');
});

describe('limits in the management API', () => {
  let project: Obj;
  let key: Obj;
  beforeAll(async () => {
    const p = await owner.post(`${org()}/projects`, { name: 'team', limits: { rpm: 100, budget_usd: '5', budget_period: 'month' } });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    project = p.body;
    const k = await owner.post(`${org()}/projects/${project.id as string}/keys`, {
      name: 'ci', limits: { rpm: 3, tpm: 50_000, max_concurrent: 2, budget_usd: 0.01, budget_period: 'day' },
    });
    expect(k.status, JSON.stringify(k.body)).toBe(201);
    key = k.body;
  });

  it('takes limits on project and key creation (budget_usd as a number or a decimal string) and shows them in lists', async () => {
    expect(project.limits).toEqual({ rpm: 100, tpm: null, max_concurrent: null, budget_usd: 5, budget_period: 'month', mode: null });
    expect(key.limits).toEqual({ rpm: 3, tpm: 50_000, max_concurrent: 2, budget_usd: 0.01, budget_period: 'day', mode: null });
    const listed = rows(await member.get(`${org()}/keys`)).find((k) => k.id === key.id);
    expect(listed?.limits).toEqual(key.limits);
    expect(rows(await member.get(`${org()}/projects`)).find((p) => p.id === project.id)?.limits).toEqual(project.limits);
    expect(rows(await member.get(`${org()}/projects`)).find((p) => p.name === 'default')?.limits)
      .toEqual({ rpm: null, tpm: null, max_concurrent: null, budget_usd: null, budget_period: null, mode: null });
  });

  it('budget-check names the dearest chat model whose one-request bound is over a budget, until a default max_tokens makes every request fit', async () => {
    const check = async (q: string): Promise<Obj> => {
      const r = await member.get(`${org()}/budget-check?${q}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const before = (await check(`key=${key.id as string}`)).shortfall as Obj;
    expect(before).toMatchObject({ default_max_tokens: null });
    expect(before.bound_usd as number).toBeGreaterThan(0.01);
    expect(before.models_over as number).toBeGreaterThan(0);
    expect(before.models_over as number).toBeLessThanOrEqual(before.models_total as number);
    expect((await check(`project=${String(project.id)}`)).shortfall).toBeNull(); // $5 a month holds one request on every model
    expect(code(await member.get(`${org()}/budget-check`))).toBe('invalid_request');
    expect(code(await member.get(`${org()}/budget-check?key=key_missing`))).toBe('not_found');
    // A project default of 20 output tokens bounds every request far below $0.01.
    expect((await owner.patch(`${org()}/projects/${project.id as string}`, { default_max_tokens: 20 })).status).toBe(200);
    expect((await check(`key=${key.id as string}`)).shortfall).toBeNull();
    expect((await owner.patch(`${org()}/projects/${project.id as string}`, { default_max_tokens: null })).status).toBe(200);
  });

  it('GET shows the current window, slots and the budget spent this period with when it resets', async () => {
    for (let i = 0; i < 2; i++) expect((await chat(key.key as string)).status).toBe(200);
    await t.gateway.log.flush();
    const r = await member.get(`${org()}/keys/${key.id as string}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const usage = r.body.usage as Obj;
    expect(usage.rpm).toMatchObject({ limit: 3, used: 2, remaining: 1, resets_at: new Date(clock + 60_000).toISOString() });
    expect(usage.concurrency).toEqual({ limit: 2, used: 0, remaining: 2 });
    const budget = usage.budget as Obj;
    expect(budget).toMatchObject({ limit_usd: 0.01, period: 'day', held_usd: 0, period_start: '2026-11-03T00:00:00.000Z', resets_at: '2026-11-04T00:00:00.000Z' });
    expect(budget.spent_usd).toBeGreaterThan(0);
    expect(budget.remaining_usd).toBeCloseTo(0.01 - (budget.spent_usd as number), 6);
    const p = await member.get(`${org()}/projects/${project.id as string}`);
    expect(p.status).toBe(200);
    expect(p.body.usage).toMatchObject({ rpm: { limit: 100, used: 2 }, budget: { spent_usd: budget.spent_usd, period: 'month', resets_at: '2026-12-01T00:00:00.000Z' } });
  });

  it('lists carry the usage of the active keys with limits as GET of the key shows it, read at once for the page', async () => {
    const projectKeys = `${org()}/projects/${project.id as string}/keys`;
    const second = (await owner.post(projectKeys, { name: 'second', limits: { rpm: 7 } })).body;
    const gone = (await owner.post(projectKeys, { name: 'gone', limits: { rpm: 9 } })).body;
    expect((await owner.delete(`${org()}/keys/${gone.id as string}`)).status).toBe(200);
    const one = vi.spyOn(t.gateway.limiter, 'usage');
    const many = vi.spyOn(t.gateway.limiter, 'usageOf');
    const lists: Obj[][] = [];
    try {
      for (const path of [`${org()}/keys`, projectKeys]) lists.push(rows(await member.get(path)));
      expect(one).not.toHaveBeenCalled();
      expect(many).toHaveBeenCalledTimes(2); // one read per page, not one per key
      expect(many.mock.calls.map(([scopes]) => scopes.map((s) => s.id).sort())).toEqual(new Array(2).fill([`key:${key.id as string}`, `key:${second.id as string}`].sort()));
    } finally {
      one.mockRestore();
      many.mockRestore();
    }
    const detail = async (id: unknown): Promise<unknown> => (await member.get(`${org()}/keys/${id as string}`)).body.usage;
    for (const listed of lists) {
      const byId = new Map(listed.map((k) => [k.id, k]));
      expect(byId.get(key.id)?.usage).toEqual(await detail(key.id));
      expect((byId.get(key.id)?.usage as Obj | undefined)?.rpm).toMatchObject({ limit: 3, used: 2 });
      expect(byId.get(second.id)?.usage).toMatchObject({ rpm: { limit: 7, used: 0 }, budget: null });
      expect(byId.get(gone.id)).not.toHaveProperty('usage'); // revoked: its counts are no one's concern
    }
    expect(lists[0]!.find((k) => k.prefix === t.key.slice(0, 11))).not.toHaveProperty('usage'); // no limits
  });

  it('PATCH changes only the fields given, null removes a limit, and the gateway applies it within a second', async () => {
    expect((await chat(key.key as string)).status).toBe(200);
    expect((await chat(key.key as string)).status).toBe(429); // rpm 3 reached
    const r = await owner.patch(`${org()}/keys/${key.id as string}`, { limits: { rpm: null, budget_usd: '0.02' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.limits).toEqual({ rpm: null, tpm: 50_000, max_concurrent: 2, budget_usd: 0.02, budget_period: 'day', mode: null });
    expect((r.body.usage as Obj).rpm).toBeNull();
    clock += 1_001; // the auth cache's second
    const after = await chat(key.key as string);
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-limit-requests')).toBe('100'); // now only the project's rpm applies
    // The mode is set, kept by later changes, and back to the rule with null (docs/limits.md "Exact and lease mode").
    const leased = await owner.patch(`${org()}/keys/${key.id as string}`, { limits: { mode: 'lease' } });
    expect(leased.body.limits).toMatchObject({ tpm: 50_000, mode: 'lease' });
    expect((await owner.patch(`${org()}/keys/${key.id as string}`, { limits: { tpm: 60_000 } })).body.limits).toMatchObject({ tpm: 60_000, mode: 'lease' });
    const back = await owner.patch(`${org()}/keys/${key.id as string}`, { limits: { mode: null, tpm: 50_000 } });
    expect(back.body.limits, JSON.stringify(back.body)).toMatchObject({ tpm: 50_000, mode: null });
    const p = await owner.patch(`${org()}/projects/${project.id as string}`, { limits: { budget_period: 'total', mode: 'exact' } });
    expect(p.body.limits).toMatchObject({ rpm: 100, budget_usd: 5, budget_period: 'total', mode: 'exact' });
    expect((p.body.usage as Obj).budget).toMatchObject({ period: 'total', period_start: null, resets_at: null });
    const cleared = await owner.patch(`${org()}/projects/${project.id as string}`, { limits: { rpm: null, budget_usd: null, mode: null } });
    expect(cleared.body.limits).toEqual({ rpm: null, tpm: null, max_concurrent: null, budget_usd: null, budget_period: null, mode: null });
  });

  it('refuses bad limits with a 400 naming the field, and members may read but not change them', async () => {
    const path = `${org()}/keys/${key.id as string}`;
    const cases: Array<[Obj, string]> = [
      [{ rpm: -1 }, 'limits.rpm'],
      [{ rpm: 1.5 }, 'limits.rpm'],
      [{ budget_usd: '1.0000001' }, 'limits.budget_usd'],
      [{ budget_period: 'week' }, 'limits.budget_period'],
      [{ mode: 'sometimes' }, 'limits.mode'],
      [{ budget_usd: null, budget_period: 'day' }, 'limits.budget_period'],
      [{ burst: 4 }, 'limits.burst'],
    ];
    for (const [limits, param] of cases) {
      const r = await owner.patch(path, { limits });
      expect(r.status, JSON.stringify(limits)).toBe(400);
      expect(code(r)).toBe('invalid_request');
      expect((r.body.error as Obj).param, JSON.stringify(r.body)).toBe(param);
    }
    const newKey = await owner.post(`${org()}/projects/${project.id as string}/keys`, { limits: { budget_usd: 1 } });
    expect(newKey.status).toBe(400);
    expect((newKey.body.error as Obj).param).toBe('limits.budget_period');
    const denied = await member.patch(path, { limits: { rpm: 1 } });
    expect(denied.status).toBe(403);
    expect(code(denied)).toBe('permission_denied');
    expect((await member.patch(`${org()}/projects/${project.id as string}`, { limits: { rpm: 1 } })).status).toBe(403);
    expect((await owner.get(`${org()}/keys/key_nope`)).status).toBe(404);
  });

  it('documents the routes and the limits object in the OpenAPI document', async () => {
    const doc = (await owner.get('/api/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    expect(Object.keys(doc.paths['/api/v1/orgs/{org}/keys/{key}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch']);
    expect(Object.keys(doc.paths['/api/v1/orgs/{org}/projects/{project}'] ?? {}).sort()).toEqual(['get', 'patch']);
    expect(JSON.stringify(doc.paths['/api/v1/orgs/{org}/projects/{project}/keys']?.post?.requestBody)).toContain('budget_period');
    for (const path of ['/api/v1/orgs/{org}/keys', '/api/v1/orgs/{org}/projects/{project}/keys']) {
      expect(JSON.stringify(doc.paths[path]?.get)).toContain('Present for active keys with limits');
    }
  });
});
