import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_URL, pgQuery, sharedPostgresSchema } from './drivers.testkit.js';
import { PostgresStore } from './postgres.js';
import type { LogRow } from './types.js';

/*
 * A PostgreSQL restart cuts every connection, including one checked out of the pool for a
 * transaction (a log batch with its charges, a reaper run). pg emits 'error' on such a
 * client; unheard, Node exits the gateway process, and the rows and settlements it still
 * held in memory die with it: requests served, neither charged nor logged. The transaction
 * must instead fail like any failed batch, and the batch be written at the next flush.
 * Without the listener in PostgresStore.transaction() this file fails with vitest's
 * "Uncaught Exception: Connection terminated unexpectedly" (exit code 1).
 */

const db = sharedPostgresSchema('restart');
const { url } = db;

afterAll(() => db.drop());

describe('PostgreSQL: a connection cut inside a log batch transaction', () => {
  it('fails the batch (no process exit), keeps rows and settlements, and the next flush writes each once', async () => {
    const store = new PostgresStore(url, Date.now, { ledger: { instanceTimeoutMs: 60_000, reservationMaxAgeMs: 3_600_000 } });
    // The locker, on its own connection: holds the reservation row so the batch's transaction waits inside it.
    const locker = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${new URL(url).searchParams.get('schema')}` });
    try {
      const org = await store.createOrg('cut', 1_000_000, 'standard');
      const requestId = `req_${randomBytes(12).toString('hex')}`;
      expect(await store.reserve(org.id, requestId, 5000)).toBe(true);
      expect(await store.settle(requestId, 1234)).toBe(1234);
      const row: LogRow = {
        requestId, orgId: org.id, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'gpt-4o-mini',
        usedModel: 'gpt-4o-mini', usedProvider: 'openai', status: 200, errorCode: null, costMicros: 1234, costEstimated: false, byok: false,
        durationMs: 5, ttfbMs: null, prompt: null, attempts: [], createdAt: Date.now(), extra: null, promptTokens: 10, completionTokens: 2,
      };

      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM reservations WHERE request_id = $1 FOR UPDATE', [requestId]);
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const batch = store.insertLogs([row]).then(() => 'written', (err: unknown) => `failed: ${String(err)}`);
      // The batch's backend, waiting on the locker inside its transaction (bounded wait: it queues at once).
      let blocked: number | undefined;
      for (let i = 0; i < 200 && blocked === undefined; i++) {
        blocked = (await pgQuery<{ pid: number }>(url, 'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid]))[0]?.pid;
        if (blocked === undefined) await new Promise((r) => setTimeout(r, 10));
      }
      expect(blocked).toBeDefined();
      // What a restart does to it: the backend is terminated (FATAL 57P01, then the socket closes).
      await pgQuery(url, 'SELECT pg_terminate_backend($1)', [blocked]);
      expect(await batch).toMatch(/^failed: /);
      await locker.query('ROLLBACK');
      expect(store.ledger?.pendingCount).toBe(1);

      // Retried, as the request-log writer does at its next flush: one row, one charge.
      await store.insertLogs([row]);
      expect(store.ledger?.pendingCount).toBe(0);
      expect((await store.getLog(requestId))?.costMicros).toBe(1234);
      const audit = await store.audit(org.id);
      expect(audit).toMatchObject({ held: 0, charged: 1234, logged: 1234 });
      expect(audit.credited - audit.balance).toBe(1234);
    } finally {
      await locker.end().catch(() => undefined);
      await store.close();
    }
  });
});
