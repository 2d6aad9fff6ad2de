import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InlineWriter, ThreadWriter } from './sqlite-writer.js';

const STATEMENTS = {
  add: 'INSERT INTO t (k, v) VALUES (?, ?)',
  bump: 'UPDATE t SET v = v + ? WHERE k = ?',
} as const;

describe('SQLite batch writer on a thread of its own', () => {
  let dir: string;
  let db: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-writer-'));
    db = new Database(join(dir, 'w.db'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)');
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const writer = () => new ThreadWriter(join(dir, 'w.db'), STATEMENTS, new InlineWriter(db, STATEMENTS));
  const rows = () => db.prepare('SELECT k, v FROM t ORDER BY k').all();

  it('commits each batch in one transaction, in the order sent, visible to the caller\'s connection once it resolves', async () => {
    const w = writer();
    const first = w.run([['add', ['a', 1]], ['add', ['b', 2]]]);
    const second = w.run([['bump', [10, 'a']]]);
    await first;
    expect(rows()).toContainEqual({ k: 'b', v: 2 });
    await second; // run after the first: the bump found the row

    expect(rows()).toEqual([{ k: 'a', v: 11 }, { k: 'b', v: 2 }]);
    await w.close();
  });

  it('rejects a failing batch with nothing of it written, and goes on with the next', async () => {
    const w = writer();
    await w.run([['add', ['a', 1]]]);
    const failed = w.run([['add', ['b', 2]], ['add', ['a', 3]]]); // a is taken: the whole batch rolls back
    await expect(failed).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    await w.run([['add', ['c', 3]]]);
    expect(rows()).toEqual([{ k: 'a', v: 1 }, { k: 'c', v: 3 }]);
    await w.close();
  });

  it('close() waits for every batch sent before it', async () => {
    const w = writer();
    const all = Array.from({ length: 200 }, (_, i) => w.run([['add', [`k${String(i).padStart(3, '0')}`, i]]]));
    await w.close();
    const outcomes = await Promise.allSettled(all);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(rows()).toHaveLength(200);
  });

  it("after the thread dies, later batches are written inline on the caller's connection", async () => {
    const w = writer();
    await w.run([['add', ['a', 1]]]);
    // The worker is gone the way a crash of the thread would leave it.
    await (w as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await w.run([['add', ['b', 2]]]);
    expect(rows()).toEqual([{ k: 'a', v: 1 }, { k: 'b', v: 2 }]);
    await w.close();
  });
});
