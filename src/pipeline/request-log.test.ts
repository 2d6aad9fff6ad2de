import { describe, expect, it } from 'vitest';
import { RequestLogWriter } from './request-log.js';
import { SqliteStore } from '../store/sqlite.js';
import type { LogRow } from '../store/types.js';

const row = (n: number): LogRow => ({
  requestId: `req_${String(n).padStart(24, '0')}`, orgId: null, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'm', usedModel: 'm',
  usedProvider: 'p', status: 200, errorCode: null, costMicros: n, costEstimated: false, byok: false, durationMs: 1, ttfbMs: 1,
  prompt: 'hi', attempts: [], createdAt: n, extra: null, promptTokens: null, completionTokens: null,
});

describe('RequestLogWriter', () => {
  it('writes nothing on the request path and everything on close', async () => {
    const store = new SqliteStore(':memory:');
    const writer = new RequestLogWriter(store, { flushIntervalMs: 60_000, batchSize: 1000, onError: () => undefined });
    for (let i = 0; i < 10; i++) writer.enqueue(row(i));
    expect(await store.getLog(row(3).requestId)).toBeUndefined();
    expect(writer.pending).toBe(10);
    await writer.close();
    expect(writer.pending).toBe(0);
    for (let i = 0; i < 10; i++) expect((await store.getLog(row(i).requestId))?.costMicros).toBe(i);
  });

  it('flushes when a batch fills up', async () => {
    const store = new SqliteStore(':memory:');
    const writer = new RequestLogWriter(store, { flushIntervalMs: 60_000, batchSize: 3, onError: () => undefined });
    for (let i = 0; i < 3; i++) writer.enqueue(row(i));
    await writer.flush();
    expect(await store.getLog(row(2).requestId)).toBeDefined();
  });

  it('keeps a batch whose write failed and writes it next time', async () => {
    const store = new SqliteStore(':memory:');
    const insert = store.insertLogs.bind(store);
    let failures = 1;
    store.insertLogs = async (rows) => {
      if (failures-- > 0) throw new Error('disk full');
      return insert(rows);
    };
    const errors: string[] = [];
    const writer = new RequestLogWriter(store, { flushIntervalMs: 60_000, batchSize: 100, onError: (e, n) => errors.push(`${(e as Error).message}:${n}`) });
    writer.enqueue(row(1));
    await writer.flush();
    expect(errors).toEqual(['disk full:1']);
    expect(writer.pending).toBe(1);
    writer.enqueue(row(2));
    await writer.close();
    expect(await store.getLog(row(1).requestId)).toBeDefined();
    expect(await store.getLog(row(2).requestId)).toBeDefined();
  });

  it("records each key's last use with the batch, not per request", async () => {
    const store = new SqliteStore(':memory:');
    const org = await store.createOrg('o', 0, 'standard');
    const project = (await store.tenancy.findProject(org.id, 'default'))!;
    const key = (await store.tenancy.createKey({ orgId: org.id, projectId: project.id, prefix: 'tg_AAAAAAAA', hash: 'a'.repeat(64), name: '', expiresAt: null, allowedModels: null, createdBy: null }))!;
    const writer = new RequestLogWriter(store, { flushIntervalMs: 60_000, batchSize: 100, onError: () => undefined });
    for (const n of [30, 50, 40]) writer.enqueue({ ...row(n), orgId: org.id, projectId: project.id, apiKeyId: key.id });
    expect((await store.tenancy.getKey(org.id, key.id))?.lastUsedAt).toBeNull();
    await writer.flush();
    expect((await store.tenancy.getKey(org.id, key.id))?.lastUsedAt).toBe(50);
  });
});
