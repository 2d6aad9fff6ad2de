import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from './cli-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';
import { type Api, ownerWithProject } from './management-helpers.js';

/*
 * The response cache's settings through the management API (docs/management.md, docs/cache.md):
 * PATCH on projects and keys turns it on, a key's fields win over its project's, null clears;
 * the change reaches the gateway at once (the key cache is evicted); the audit log records it;
 * the log list shows each request's cache result and what a hit saved.
 */

describe('cache settings by PATCH on projects and keys', () => {
  const t = useOrgGateway('cache-mgmt', '5', {}, { ledger: true });
  let owner: Api;
  let path: string;
  let keyPath: string;
  let key: string;
  beforeAll(async () => {
    ({ owner, path, key, keyPath } = await ownerWithProject(t, 'cache-mgmt', 'owner@cache.test', 'cached'));
  });
  const ask = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'managed cache' }], max_tokens: 50 }, key);

  it('off until the project turns it on; then a repeated request hits, and the log list shows the hit and its saving', async () => {
    expect((await ask()).headers.get('x-tollgate-cache')).toBeNull();
    const p = await owner.patch(path, { cache: { mode: 'exact', ttl_s: 600 } });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect(p.body.cache).toEqual({ mode: 'exact', ttl_s: 600 });
    expect((await owner.get(path)).body.cache).toEqual({ mode: 'exact', ttl_s: 600 });
    const miss = await ask();
    const hit = await ask();
    expect([miss.headers.get('x-tollgate-cache'), hit.headers.get('x-tollgate-cache')]).toEqual(['miss', 'hit']);
    await logRow(t, hit.headers.get('x-request-id') ?? '');
    const list = await owner.get(`/api/v1/orgs/${t.orgId}/logs?limit=1`);
    const [row] = list.body.data as Array<Record<string, unknown>>;
    expect(row).toMatchObject({ id: hit.headers.get('x-request-id'), cache: 'hit', cost_usd: 0, cache_age_ms: expect.any(Number) });
    expect(row?.saved_usd).toBeGreaterThan(0);
    // The console's cache view: hit rate and money saved per project and day.
    const view = await owner.get(`/api/v1/orgs/${t.orgId}/cache?days=7`);
    expect(view.status, JSON.stringify(view.body)).toBe(200);
    const [day] = view.body.data as Array<Record<string, unknown>>;
    expect(day).toMatchObject({ project_name: 'cached', hits: 1, misses: 1, bypasses: 0, hit_rate: 0.5, saved_usd: row?.saved_usd, charged_usd: 0 });
    expect(view.body.saved_usd).toBe(row?.saved_usd);
    // The same from the command line.
    const stats = await cli(['cache-stats', '--org', 'cache-mgmt', '--config', join(t.dir, 'gateway.yaml')]);
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.stdout).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d  cached  hits 1  misses 1  bypasses 0  hit rate 50\\.0%  saved \\$${row?.saved_usd as number}\n$`));
  });

  it('a key\'s own setting wins over its project\'s (off for this key), and null clears it back to the project\'s', async () => {
    const k = await owner.patch(keyPath, { cache: { mode: 'off' } });
    expect(k.status, JSON.stringify(k.body)).toBe(200);
    expect(k.body.cache).toEqual({ mode: 'off' });
    expect((await ask()).headers.get('x-tollgate-cache')).toBeNull();
    expect((await owner.patch(keyPath, { cache: null })).body.cache).toBeNull();
    expect((await ask()).headers.get('x-tollgate-cache')).toBe('hit');
    const audit = await owner.get(`/api/v1/orgs/${t.orgId}/audit?limit=5`);
    expect(JSON.stringify(audit.body)).toContain('"cache"');
  });

  it('refuses a setting outside its bounds (400), leaving it as it was', async () => {
    const bad = await owner.patch(path, { cache: { mode: 'exact', hit_price: 2 } });
    expect(bad.status).toBe(400);
    const worse = await owner.patch(path, { cache: { mode: 'always' } });
    expect(worse.status).toBe(400);
    expect((await owner.get(path)).body.cache).toEqual({ mode: 'exact', ttl_s: 600 });
  });
});
