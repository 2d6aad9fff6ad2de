import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** One statement of a write batch: the name of a prepared statement and its positional parameters. */
export type WriteStep<Name extends string = string> = [name: Name, params: unknown[]];

/** Runs batches of prepared statements, each batch in one transaction. */
export interface BatchWriter<Name extends string = string> {
  /** Resolves once the batch has committed; rejects (nothing of it written) if it could not. */
  run(steps: readonly WriteStep<Name>[]): Promise<void>;
  /** Waits for the batches sent, then stops. */
  close(): Promise<void>;
}

/** On the caller's own connection: a batch blocks the event loop while it runs (`:memory:` databases, the CLI). */
export class InlineWriter<Name extends string> implements BatchWriter<Name> {
  private readonly tx;

  constructor(db: Database.Database, statements: Readonly<Record<Name, string>>) {
    const stmts = new Map(Object.entries<string>(statements).map(([name, sql]) => [name, db.prepare(sql)]));
    this.tx = db.transaction((steps: readonly WriteStep<Name>[]) => {
      for (const [name, params] of steps) stmts.get(name)!.run(params);
    });
  }

  async run(steps: readonly WriteStep<Name>[]): Promise<void> {
    if (steps.length > 0) this.tx(steps);
  }

  async close(): Promise<void> {}
}

/*
 * The worker's whole program. It knows nothing of Tollgate: it opens the file, prepares
 * the statements it is given and runs each batch it receives in one transaction. Plain
 * JavaScript (run with `eval`), so the same code runs from the TypeScript sources under
 * the tests and from dist/.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
const stmts = new Map(Object.entries(workerData.statements).map(([name, sql]) => [name, db.prepare(sql)]));
const tx = db.transaction((steps) => { for (const [name, params] of steps) stmts.get(name).run(params); });
parentPort.on('message', (m) => {
  if (m.close) { db.close(); parentPort.close(); return; }
  try { tx(m.steps); parentPort.postMessage({ id: m.id }); }
  catch (err) { parentPort.postMessage({ id: m.id, error: String(err && err.message || err), code: err && err.code }); }
});
`;

interface Pending { resolve: () => void; reject: (err: Error) => void }

/**
 * Runs the batches on a second connection in a worker thread, so the request-log
 * and ledger writes of a busy gateway (B-tree inserts, WAL appends, checkpoints) take
 * no time from the event loop. Batches commit in the order they are sent. If the
 * worker dies, the batches in flight are rejected (their callers keep them and retry)
 * and later ones run inline on `fallback`, the caller's own connection.
 */
export class ThreadWriter<Name extends string> implements BatchWriter<Name> {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: Error | undefined;
  private closed: Promise<void> | undefined;

  constructor(path: string, statements: Readonly<Record<Name, string>>, private readonly fallback: InlineWriter<Name>) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, statements, driver } });
    this.worker.unref();
    this.worker.on('message', (m: { id: number; error?: string; code?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.settled(m.id);
      if (m.error === undefined) p.resolve();
      else p.reject(Object.assign(new Error(m.error), { code: m.code }));
    });
    const die = (err: Error): void => {
      this.dead ??= err;
      for (const [id, p] of this.pending) {
        this.settled(id);
        p.reject(err);
      }
    };
    this.worker.on('error', die);
    this.worker.on('exit', (code) => die(new Error(`the SQLite writer thread exited (code ${code})`)));
  }

  /** While a batch is in flight the worker keeps the process alive, so an exit does not drop it. */
  private settled(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker.unref();
  }

  run(steps: readonly WriteStep<Name>[]): Promise<void> {
    if (steps.length === 0) return Promise.resolve();
    if (this.dead || this.closed) return this.fallback.run(steps);
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, steps });
    });
  }

  /** The worker runs what it was sent before the close message, answers each, then exits. */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      if (this.dead) return resolve();
      this.worker.ref();
      this.worker.once('exit', () => resolve());
      this.worker.postMessage({ close: true });
    });
    return this.closed;
  }
}
