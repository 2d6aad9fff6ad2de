import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import type { LogRow } from '../src/store/types.js';
import { chat } from './cli-helpers.js';
import { pgQuery, sharedPostgresSchema } from './fleet.js';
import { useGateway } from './fixtures.js';
import { tempDir } from './harness.js';

/*
 * The PostgreSQL ledger of one gateway (issue 14, findings 2 and 3): a charge is written
 * in the transaction that writes its log row, so a failed write leaves neither; what
 * cannot be written is retried and kept in a spill file until the database takes it;
 * a spill file left by a dead process is applied by the next start, once.
 */

const db = sharedPostgresSchema('ledger');
const spillDir = join(tempDir(), 'spill');
afterAll(() => db.drop());

const t = useGateway({
  yaml: { database: { url: db.url, spill_dir: spillDir, instance_timeout_ms: 1000 }, log: { level: 'silent', flush_interval_ms: 20 } },
});

/** A trigger that refuses every request-log insert while `fail_logs` has a row: the database "refuses" the batch. */
async function breakLogWrites(): Promise<void> {
  await pgQuery(db.url, `CREATE TABLE IF NOT EXISTS fail_logs (x int);
    CREATE OR REPLACE FUNCTION refuse_logs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF EXISTS (SELECT 1 FROM fail_logs) THEN RAISE EXCEPTION 'log writes refused (test)'; END IF; RETURN NEW; END $$;
    DROP TRIGGER IF EXISTS refuse_logs ON request_logs;
    CREATE TRIGGER refuse_logs BEFORE INSERT ON request_logs FOR EACH ROW EXECUTE FUNCTION refuse_logs();
    INSERT INTO fail_logs VALUES (1);`);
}

const spillFile = (): string => join(spillDir, `ledger-spill-${hostname()}-${process.pid}.json`);

/** Nothing held, something logged, and charges = logged costs = credited − balance, to the µUSD. */
function expectSettledExact(a: { held: number; logged: number; charged: number; credited: number; balance: number }): void {
  expect(a.held).toBe(0);
  expect(a.logged).toBeGreaterThan(0);
  expect(a.charged).toBe(a.logged);
  expect(a.credited - a.balance).toBe(a.logged);
}

describe('PostgreSQL: ledger and log together', () => {
  it('charges each request with its row, one commit for both, and holds nothing after', async () => {
    const org = await createOrg(t.gateway.store, 'pg-ledger', '5', 'standard');
    const { key } = await createKey(t.gateway.store, 'pg-ledger');
    const replies = await Promise.all(Array.from({ length: 12 }, () => chat(t.url, key)));
    expect(replies.map((r) => r.status)).toEqual(new Array(12).fill(200));
    await t.gateway.log.flush();
    const audit = await t.gateway.store.audit(org.id);
    expectSettledExact(audit);
  });

  it('a batch the database refuses leaves neither charge nor row, is spilled to disk, and is written when the database takes it', async () => {
    const org = await createOrg(t.gateway.store, 'pg-refused', '5', 'standard');
    const { key } = await createKey(t.gateway.store, 'pg-refused');
    await breakLogWrites();
    try {
      const replies = await Promise.all(Array.from({ length: 5 }, () => chat(t.url, key)));
      expect(replies.map((r) => r.status)).toEqual(new Array(5).fill(200));
      await t.gateway.log.flush();
      // Served, settled in memory, not written: no charge without its row, the credit still held.
      const during = await t.gateway.store.audit(org.id);
      expect(during).toMatchObject({ charged: 0, logged: 0 });
      expect(during.held).toBeGreaterThan(0);
      expect(existsSync(spillFile())).toBe(true);
    } finally {
      await pgQuery(db.url, 'DELETE FROM fail_logs');
    }
    await t.gateway.log.flush();
    const after = await t.gateway.store.audit(org.id);
    expectSettledExact(after);
    expect(existsSync(spillFile())).toBe(false);
  });

  it('a spill file left by a dead process is applied at the next start, once, even after its reservations were released', async () => {
    const org = await createOrg(t.gateway.store, 'pg-spilled', '1', 'standard');
    const row: LogRow = {
      requestId: 'req_spilled000000000000001', orgId: org.id, projectId: null, apiKeyId: null, modality: 'chat', requestedModel: 'gpt-4o-mini',
      usedModel: 'gpt-4o-mini', usedProvider: 'openai', status: 200, errorCode: null, costMicros: 1234, costEstimated: false, byok: false,
      durationMs: 5, ttfbMs: null, prompt: null, attempts: [], createdAt: Date.now(), extra: null, promptTokens: 10, completionTokens: 2,
    };
    mkdirSync(spillDir, { recursive: true });
    // pid 2^22+1 is above Linux's pid_max default: a process that is gone.
    const file = join(spillDir, `ledger-spill-${hostname()}-4194305.json`);
    const spilled = JSON.stringify({ rows: [row], settlements: [{ requestId: row.requestId, orgId: org.id, cost: 1234 }] });
    writeFileSync(file, spilled);
    const { startTestGateway } = await import('./harness.js');
    const yaml = { database: { url: db.url, spill_dir: spillDir }, log: { level: 'silent', flush_interval_ms: 20 } };
    const second = await startTestGateway({ yaml, sim: t.sim });
    try {
      expect(existsSync(file)).toBe(false);
      expect((await second.gateway.store.getLog(row.requestId))?.costMicros).toBe(1234);
      // Replayed again (a copy that survived): still one charge.
      writeFileSync(file, spilled);
      await second.close();
      const third = await startTestGateway({ yaml, sim: t.sim });
      await third.close();
    } finally {
      await second.close();
    }
    const audit = await t.gateway.store.audit(org.id);
    expect(audit).toMatchObject({ held: 0, charged: 1234, logged: 1234, balance: 1_000_000 - 1234 });
  });
});
