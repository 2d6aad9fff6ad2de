import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredBodies } from '../model/guardrails.js';
import { drivers, type DriverEnv } from './drivers.testkit.js';
import { openStore } from './index.js';
import type { LogRow, Store } from './types.js';

/**
 * Logged bodies (migration 19, docs/guardrails.md) on both drivers: written beside the log
 * rows, read org-scoped, replaced when a row is written again, swept past their expiry in
 * batches — the log row and its cost stay — and never part of the log list's rows.
 */
const DAY = 86_400_000;
const bodies = (requestId: string, orgId: string, createdAt: number, over: Partial<StoredBodies> = {}): StoredBodies => ({
  requestId, orgId, createdAt, expiresAt: createdAt + 2 * DAY, request: `{"model":"m","messages":[{"content":"[EMAIL_1] ${'x'.repeat(50_000)}"}]}`,
  response: 'data: {"choices":[]}\n\n', truncated: false, ...over,
});
const row = (requestId: string, orgId: string, createdAt: number): LogRow => ({
  requestId, orgId, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'm', usedModel: 'm', usedProvider: 'p', status: 200, errorCode: null,
  costMicros: 0, promptTokens: 1, completionTokens: 1, costEstimated: false, byok: false, durationMs: 5, ttfbMs: 1, prompt: '[EMAIL_1]', attempts: [], createdAt,
  extra: null, guardrails: [{ guardrail: 'pii', stage: 'pre-upstream', action: 'mask', categories: ['email'], count: 1 }],
});

describe.each(drivers)('$name request bodies', ({ setup }) => {
  let env: DriverEnv | undefined;
  let store: Store;
  const t0 = 1_700_000_000_000;

  beforeAll(async () => {
    env = setup();
    store = openStore(env.url('bodies'));
    await store.ping();
  });
  afterAll(async () => {
    await store?.close();
    await env?.teardown();
  });

  it('writes, reads org-scoped, and replaces bodies written again', async () => {
    await store.bodies.insert([bodies('req_a', 'org_1', t0), bodies('req_b', 'org_2', t0 + DAY)]);
    const a = await store.bodies.get('org_1', 'req_a');
    expect(a).toEqual(bodies('req_a', 'org_1', t0));
    expect(await store.bodies.get('org_2', 'req_a')).toBeUndefined();
    await store.bodies.insert([bodies('req_a', 'org_1', t0, { response: 'again', truncated: true })]);
    expect(await store.bodies.get('org_1', 'req_a')).toMatchObject({ response: 'again', truncated: true });
  });

  it('keeps verdicts in the log row, not the bodies', async () => {
    await store.insertLogs([row('req_a', 'org_1', t0)]);
    const logged = await store.getLog('req_a');
    expect(logged?.guardrails).toEqual([{ guardrail: 'pii', stage: 'pre-upstream', action: 'mask', categories: ['email'], count: 1 }]);
    expect(JSON.stringify(logged)).not.toContain('xxxxxxxx');
  });

  it('sweeps bodies past their expiry in batches; the others and the log rows stay', async () => {
    await store.bodies.insert(Array.from({ length: 5 }, (_, i) => bodies(`req_old${i}`, 'org_1', t0 - 10 * DAY)));
    expect(await store.bodies.deleteExpired(t0 + DAY, 3)).toBe(3);
    expect(await store.bodies.deleteExpired(t0 + DAY, 3)).toBe(2);
    expect(await store.bodies.deleteExpired(t0 + DAY, 3)).toBe(0);
    expect(await store.bodies.get('org_1', 'req_a')).toBeDefined();
    expect(await store.bodies.deleteExpired(t0 + 2 * DAY, 100)).toBe(1);
    expect(await store.bodies.get('org_1', 'req_a')).toBeUndefined();
    expect(await store.bodies.get('org_2', 'req_b')).toBeDefined();
    expect((await store.getLog('req_a'))?.requestId).toBe('req_a');
  });
});
