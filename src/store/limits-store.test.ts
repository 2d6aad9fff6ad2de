import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import type { LogRow } from './types.js';
import { drivers, useStorePair } from './drivers.testkit.js';
import { parseScopeId } from '../model/limit-scope.js';
import type { Org, Store } from './types.js';

describe.each(drivers)('$name limits of keys and projects', ({ setup }) => {
  const T0 = 1_700_000_000_000;
  const pair = useStorePair(setup, 'limits', () => T0);
  let store: Store;
  let other: Store;
  beforeAll(() => {
    ({ store, other } = pair);
  });

  const newOrg = (): Promise<Org> => store.createOrg(`org ${newId('t')}`, 0, 'standard');
  const newKey = async (org: Org, projectId: string, limits = {}) => (await store.tenancy.createKey({
    orgId: org.id, projectId, prefix: `tg_${newId('k').slice(2, 10)}`, hash: 'c'.repeat(64), name: '', expiresAt: null,
    allowedModels: null, createdBy: null, limits,
  }))!;

  it('stores limits given at creation, replaces them whole, and clears them; other orgs cannot touch them', async () => {
    const org = await newOrg();
    const stranger = await newOrg();
    const project = await store.tenancy.createProject(org.id, 'web', { rpm: 100, budget: { micros: 5_000_000, period: 'month' } });
    expect(project.limits).toEqual({ rpm: 100, budget: { micros: 5_000_000, period: 'month' } });
    expect((await other.tenancy.getProject(org.id, project.id))?.limits).toEqual({ rpm: 100, budget: { micros: 5_000_000, period: 'month' } });
    const key = await newKey(org, project.id, { rpm: 30, tpm: 10_000, maxConcurrent: 2, budget: { micros: 10_000, period: 'day' } });
    expect(key.limits).toEqual({ rpm: 30, tpm: 10_000, maxConcurrent: 2, budget: { micros: 10_000, period: 'day' } });
    expect((await other.findApiKey(key.prefix))?.limits).toEqual(key.limits);

    expect(await store.limits.setKeyLimits(org.id, key.id, { tpm: 50_000_000_000 })).toBe(true);
    expect((await other.findApiKey(key.prefix))?.limits).toEqual({ tpm: 50_000_000_000 });
    expect((await other.tenancy.getKey(org.id, key.id))?.limits).toEqual({ tpm: 50_000_000_000 });
    expect(await store.limits.setKeyLimits(stranger.id, key.id, {})).toBe(false);
    expect(await store.limits.setProjectLimits(stranger.id, project.id, {})).toBe(false);
    expect((await other.findApiKey(key.prefix))?.limits).toEqual({ tpm: 50_000_000_000 });

    expect(await store.limits.setProjectLimits(org.id, project.id, { maxConcurrent: 0 })).toBe(true);
    expect((await other.tenancy.listProjects(org.id)).find((p) => p.id === project.id)?.limits).toEqual({ maxConcurrent: 0 });
    expect(await store.limits.setKeyLimits(org.id, key.id, {})).toBe(true);
    expect((await other.findApiKey(key.prefix))?.limits).toEqual({});
  });

  it('sums the logged cost of a key and of a project from a start time, BYOK and errors included', async () => {
    const org = await newOrg();
    const project = await store.tenancy.createProject(org.id, 'p');
    const a = await newKey(org, project.id);
    const b = await newKey(org, project.id);
    const row = (key: string, cost: number, at: number, over: Partial<LogRow> = {}): LogRow => ({
      requestId: newId('req'), orgId: org.id, projectId: project.id, apiKeyId: key, modality: 'chat', requestedModel: 'm', usedModel: 'm',
      usedProvider: 'p', status: 200, errorCode: null, costMicros: cost, promptTokens: 1, completionTokens: 1, costEstimated: false, byok: false,
      durationMs: 1, ttfbMs: null, prompt: null, attempts: [], createdAt: at, extra: null, ...over,
    });
    await store.insertLogs([
      row(a.id, 100, T0 - 1), row(a.id, 200, T0), row(a.id, 300, T0 + 5, { byok: true }), row(a.id, 0, T0 + 6, { status: 429, errorCode: 'rate_limit_exceeded' }),
      row(b.id, 7, T0 + 1),
    ]);
    expect(await other.limits.spentSince(`key:${a.id}`, T0)).toBe(500);
    expect(await other.limits.spentSince(`key:${a.id}`, 0)).toBe(600);
    expect(await other.limits.spentSince(`key:${b.id}`, T0)).toBe(7);
    expect(await other.limits.spentSince(`project:${project.id}`, T0)).toBe(507);
    expect(await other.limits.spentSince(`project:${project.id}`, T0 + 10)).toBe(0);
    expect(await other.limits.spentSince('key:key_nobody', 0)).toBe(0);
  });

  it('reads the same spend from the hourly sums as the request log holds, for whole hours and any start inside an hour', async () => {
    const HOUR = 3_600_000;
    const h0 = Math.ceil(T0 / HOUR) * HOUR + 5 * HOUR; // a UTC hour, as every budget period starts on one
    const org = await newOrg();
    const [p1, p2] = [await store.tenancy.createProject(org.id, 'one'), await store.tenancy.createProject(org.id, 'two')];
    const [a, b, c] = [await newKey(org, p1.id), await newKey(org, p1.id), await newKey(org, p2.id)];
    const row = (key: { id: string; projectId: string }, cost: number, at: number, over: Partial<LogRow> = {}): LogRow => ({
      requestId: newId('req'), orgId: org.id, projectId: key.projectId, apiKeyId: key.id, modality: 'chat', requestedModel: 'm', usedModel: 'm',
      usedProvider: 'p', status: 200, errorCode: null, costMicros: cost, promptTokens: 1, completionTokens: 1, costEstimated: false, byok: false,
      durationMs: 1, ttfbMs: null, prompt: null, attempts: [], createdAt: at, extra: null, ...over,
    });
    const moved = row(a, 50, h0 + 10);
    const rows = [
      row(a, 1, h0 - HOUR), row(a, 2, h0 - 1), row(a, 4, h0), row(b, 8, h0 + 1), row(c, 16, h0 + HOUR / 2, { byok: true }),
      row(a, 32, h0 + HOUR - 1, { requestedModel: 'other' }), row(b, 64, h0 + HOUR), row(c, 128, h0 + 2 * HOUR + 5, { status: 502, errorCode: 'upstream_error' }),
      moved,
    ];
    await store.insertLogs(rows);
    const rewritten = { ...moved, costMicros: 80, createdAt: h0 + 2 * HOUR + 7 }; // the same request logged again, in a later hour
    await store.insertLogs([rewritten]);
    const logged = [...rows.filter((r) => r !== moved), rewritten];
    const sinces = [0, h0 - HOUR, h0 - 1, h0, h0 + 1, h0 + HOUR / 2, h0 + HOUR - 1, h0 + HOUR, h0 + 2 * HOUR + 6, h0 + 3 * HOUR];
    const scopes = [...[a, b, c].map((k) => ({ id: `key:${k.id}`, has: (r: LogRow) => r.apiKeyId === k.id })),
      ...[p1, p2].map((p) => ({ id: `project:${p.id}`, has: (r: LogRow) => r.projectId === p.id }))];
    for (const scope of scopes) {
      const expected = sinces.map((since) => logged.filter((r) => scope.has(r) && r.createdAt >= since).reduce((sum, r) => sum + r.costMicros, 0));
      const read = await Promise.all(sinces.map((since) => other.limits.spentSince(scope.id, since)));
      expect({ scope: scope.id, read }).toEqual({ scope: scope.id, read: expected });
    }
    expect(await other.limits.spentSince(`project:${p1.id}`, h0)).toBe(4 + 8 + 32 + 64 + 80);
  });
});

describe('limit scope ids', () => {
  it('parse back into kind and id, and refuse anything else', () => {
    expect(parseScopeId('key:key_abc')).toEqual({ kind: 'key', id: 'key_abc' });
    expect(parseScopeId('project:prj_x')).toEqual({ kind: 'project', id: 'prj_x' });
    expect(() => parseScopeId('org:x')).toThrow(RangeError);
    expect(() => parseScopeId('key:')).toThrow(RangeError);
  });
});
