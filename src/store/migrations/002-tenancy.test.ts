import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../lib/secrets.js';
import { drivers, type DriverEnv } from '../drivers.testkit.js';
import { openStore } from '../index.js';
import { rawQuery } from '../raw.testkit.js';
import { ROUND1_POSTGRES, ROUND1_SQLITE } from './round-1.testkit.js';

/** A database as round 1 left it: two orgs, their keys, log rows (one without an org), a plaintext provider key. */
async function round1Database(url: string, dialect: string): Promise<void> {
  for (const stmt of (dialect === 'sqlite' ? ROUND1_SQLITE : ROUND1_POSTGRES).split(';').map((s) => s.trim()).filter(Boolean)) await rawQuery(url, stmt);
  const exec = (sql: string, params: unknown[]): Promise<unknown> => rawQuery(url, sql, params);
  const f = dialect === 'sqlite' ? 0 : false;
  for (const [id, name] of [['org_AAAAAAAAAAAAAAAAAAAAAAAA', 'alpha'], ['org_BBBBBBBBBBBBBBBBBBBBBBBB', 'beta']]) {
    await exec('INSERT INTO orgs (id, name, balance_micros, retention, created_at) VALUES (?, ?, ?, ?, ?)', [id, name, 5_000_000, 'standard', 1_700_000_000_000]);
  }
  await exec('INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?)', ['key_a', 'org_AAAAAAAAAAAAAAAAAAAAAAAA', 'tg_aaaaaaaa', 'a'.repeat(64), 1_700_000_000_001]);
  await exec('INSERT INTO api_keys (id, org_id, prefix, hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)', ['key_b', 'org_BBBBBBBBBBBBBBBBBBBBBBBB', 'tg_bbbbbbbb', 'b'.repeat(64), 1_700_000_000_002, 1_700_000_000_003]);
  const log = (id: string, org: string | null, key: string | null, extra: string | null, cost: number): Promise<unknown> => exec(
    `INSERT INTO request_logs (id, request_id, org_id, api_key_id, modality, requested_model, status, cost_micros, cost_estimated, byok, duration_ms, attempts, extra, created_at)
      VALUES (?, ?, ?, ?, 'chat', 'gpt-4o-mini', ?, ?, ?, ?, 10, '[]', ?, ?)`,
    [`log_${id}`, `req_${id}`, org, key, org ? 200 : 401, cost, f, f, extra, 1_700_000_100_000]);
  await log('1', 'org_AAAAAAAAAAAAAAAAAAAAAAAA', 'key_a', '{"usage":{"prompt_tokens":12,"completion_tokens":7}}', 345);
  await log('2', 'org_BBBBBBBBBBBBBBBBBBBBBBBB', 'key_b', '{"storage":"inline"}', 50_000);
  await log('3', null, null, null, 0);
  await exec("INSERT INTO ledger (org_id, request_id, kind, amount_micros, created_at) VALUES ('org_AAAAAAAAAAAAAAAAAAAAAAAA', 'req_1', 'charge', -345, 1)", []);
  await exec("INSERT INTO ledger (org_id, request_id, kind, amount_micros, created_at) VALUES ('org_BBBBBBBBBBBBBBBBBBBBBBBB', 'req_2', 'charge', -50000, 1)", []);
  await exec('INSERT INTO provider_keys (org_id, provider_id, key, updated_at) VALUES (?, ?, ?, ?)', ['org_AAAAAAAAAAAAAAAAAAAAAAAA', 'openai', 'sk-round-one-plaintext-9876', 1]);
}

describe.each(drivers)('$name migration 2 (tenancy) on a round-1 database', ({ name, setup }) => {
  let env: DriverEnv | undefined;
  let url: string;

  beforeAll(async () => {
    env = setup();
    url = env.url('r1');
    await round1Database(url, name);
  });
  afterAll(async () => env?.teardown());

  it('files every key and log row under its org\'s new default project, and backfills token counts', async () => {
    const store = openStore(url);
    try {
      await store.ping();
      const [alphaProjects, betaProjects] = await Promise.all(['org_AAAAAAAAAAAAAAAAAAAAAAAA', 'org_BBBBBBBBBBBBBBBBBBBBBBBB'].map((o) => store.tenancy.listProjects(o)));
      expect(alphaProjects).toEqual([{ id: 'prj_AAAAAAAAAAAAAAAAAAAAAAAA', orgId: 'org_AAAAAAAAAAAAAAAAAAAAAAAA', name: 'default', createdAt: 1_700_000_000_000, liveKeys: 1, limits: {}, defaultMaxTokens: null, unsupportedParams: null,
        cache: null, guardrails: [], bodyLogging: { mode: 'off', retention_days: 30, max_bytes: 65_536 } }]);
      expect(betaProjects).toMatchObject([{ id: 'prj_BBBBBBBBBBBBBBBBBBBBBBBB', name: 'default', liveKeys: 0 }]);
      expect(await store.findApiKey('tg_aaaaaaaa')).toMatchObject({ id: 'key_a', projectId: 'prj_AAAAAAAAAAAAAAAAAAAAAAAA', name: '', expiresAt: null, allowedModels: null, lastUsedAt: null, limits: {} });
      expect(await store.findApiKey('tg_bbbbbbbb')).toMatchObject({ projectId: 'prj_BBBBBBBBBBBBBBBBBBBBBBBB', revokedAt: 1_700_000_000_003 });

      const [alphaLog] = await store.logQuery.list({ orgId: 'org_AAAAAAAAAAAAAAAAAAAAAAAA', projectId: 'prj_AAAAAAAAAAAAAAAAAAAAAAAA' }, 10);
      expect(alphaLog).toMatchObject({ requestId: 'req_1', projectName: 'default', keyPrefix: 'tg_aaaaaaaa', promptTokens: 12, completionTokens: 7, costMicros: 345 });
      expect(await store.getLog('req_2')).toMatchObject({ projectId: 'prj_BBBBBBBBBBBBBBBBBBBBBBBB', promptTokens: null, completionTokens: null });
      expect(await store.getLog('req_3')).toMatchObject({ orgId: null, projectId: null });
      for (const org of ['org_AAAAAAAAAAAAAAAAAAAAAAAA', 'org_BBBBBBBBBBBBBBBBBBBBBBBB']) {
        expect(await store.sumCharges(org)).toBe(await store.sumLoggedCosts(org));
        const [usage] = await store.logQuery.usage({ orgId: org }, ['project']);
        expect(usage?.costMicros).toBe(await store.sumLoggedCosts(org));
      }
      // New orgs and keys made after the migration work as on a fresh database.
      const gamma = await store.createOrg('gamma', 0, 'standard');
      expect((await store.tenancy.listProjects(gamma.id)).map((p) => p.name)).toEqual(['default']);
    } finally {
      await store.close();
    }
  });

  it('seals the round-1 plaintext provider key when a gateway opens it with a secret key', async () => {
    const store = openStore(url, undefined, { secrets: new SecretBox(randomBytes(32)) });
    try {
      expect(await store.providerKeys.sealPlaintext()).toEqual({ sealed: 1, checked: 1 });
      const raw = await rawQuery<{ key: string; key_version: number }>(url, 'SELECT key, key_version FROM provider_keys');
      expect(raw).toHaveLength(1);
      expect(raw[0]?.key_version).toBe(1);
      expect(JSON.stringify(raw)).not.toContain('round-one-plaintext');
      expect(await store.providerKeys.keysOf('org_AAAAAAAAAAAAAAAAAAAAAAAA')).toEqual(new Map([['openai', 'sk-round-one-plaintext-9876']]));
    } finally {
      await store.close();
    }
  });
});
