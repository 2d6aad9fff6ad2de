import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import type { Micros } from '../lib/money.js';
import { TtlCache } from '../lib/ttl-cache.js';
import type { WriteStep } from './sqlite-writer.js';

interface Reservation { orgId: string; amount: Micros; createdAt: number }
interface Charge { orgId: string; requestId: string; amount: Micros }

const LEASE = 'sqlite-ledger';
const LEASE_TTL_MS = 15_000;
/** Orgs whose stored balance is kept; past it the least recently used is read again. */
const MAX_CACHED_BALANCES = 10_000;

/**
 * The statements a charge is written with (run by the store's batch writer, with the log
 * rows). Each charges once: a batch run again (its answer lost with a writer thread that
 * died after the commit) finds the request's ledger row and changes nothing.
 */
export const CHARGE_STATEMENTS = {
  charge: `UPDATE orgs SET balance_micros = MAX(balance_micros - ?, 0) WHERE id = ?
    AND NOT EXISTS (SELECT 1 FROM ledger WHERE request_id = ? AND kind = 'charge')`,
  chargeEntry: "INSERT OR IGNORE INTO ledger (org_id, request_id, kind, amount_micros, note, created_at) VALUES (?, ?, 'charge', ?, NULL, ?)",
} as const;
export type ChargeStep = WriteStep<keyof typeof CHARGE_STATEMENTS>;

/** Charges taken to be written: `written()` once their batch committed, `unwritten()` if it did not (they are kept for the next). */
export interface TakenCharges { steps: ChargeStep[]; written(): void; unwritten(): void }

/**
 * The credit ledger of a gateway that owns its SQLite file. Reservations live in
 * memory and settled charges are written in batches (with the request-log rows they
 * belong to), so a request makes no synchronous disk write. The guarantees hold
 * because this process is the only one spending from this file: it takes a lease at
 * start and a second gateway process is refused (the CLI may still add credits and
 * keys: balances are re-read at every reservation). Available credit is the stored
 * balance minus what is reserved and what is charged but not yet written.
 *
 * A crash loses the reservations (nothing was taken from the stored balance) and the
 * last unwritten charges together with their log rows, so ledger and log still agree.
 */
export class BufferedSqliteLedger {
  private readonly reservations = new Map<string, Reservation>();
  /** Per org: reserved plus charged-but-unwritten micro-USD. */
  private readonly held = new Map<string, Micros>();
  private pending: Charge[] = [];
  /** Stored balances read recently: credits another process adds count within `balanceTtlMs`. */
  private readonly balances;
  private timer: NodeJS.Timeout | undefined;
  /** Batches of charges taken and not yet written or handed back. */
  private writing = 0;
  private batchEnded: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly renewTimer: NodeJS.Timeout;
  private readonly holder = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  private readonly stmt;

  /**
   * @param write runs a batch of statements in one transaction (the store's writer, which
   * may run it on another thread): charges with no log batch to ride are written with it.
   */
  constructor(
    db: Database.Database, private readonly now: () => number,
    private readonly write: (steps: ChargeStep[]) => Promise<void>, private readonly flushMs = 100, balanceTtlMs = 1000,
  ) {
    this.balances = new TtlCache<string, { micros: Micros }>({ max: MAX_CACHED_BALANCES, ttlMs: balanceTtlMs, now: Date.now });
    this.stmt = {
      balance: db.prepare<[string], { balance_micros: number }>('SELECT balance_micros FROM orgs WHERE id = ?'),
      lease: db.prepare(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
        WHERE leases.expires_at <= ? OR leases.holder = excluded.holder OR leases.holder = ?`),
      leaseHolder: db.prepare<[string], { holder: string; expires_at: number }>('SELECT holder, expires_at FROM leases WHERE name = ?'),
      release: db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?'),
    };
    this.acquire();
    this.renewTimer = setInterval(() => this.acquire(), LEASE_TTL_MS / 3);
    this.renewTimer.unref();
  }

  /** Refuses to share the file with another live gateway process; takes over from a dead one on this host. */
  private acquire(): void {
    const t = Date.now();
    const current = this.stmt.leaseHolder.get(LEASE);
    const dead = current && current.holder !== this.holder && isDeadLocalProcess(current.holder) ? current.holder : '';
    if (this.stmt.lease.run(LEASE, this.holder, t + LEASE_TTL_MS, t, dead).changes === 0) {
      throw new Error(`another gateway process (${current?.holder}) is serving this SQLite database; one SQLite file serves one gateway process — use PostgreSQL (database.url: postgres://…) to run several`);
    }
  }

  heldFor(orgId: string): Micros {
    return this.held.get(orgId) ?? 0;
  }

  private adjust(orgId: string, delta: Micros): void {
    const v = (this.held.get(orgId) ?? 0) + delta;
    if (v === 0) this.held.delete(orgId);
    else this.held.set(orgId, v);
  }

  async reserve(orgId: string, requestId: string, amount: Micros): Promise<boolean> {
    if (this.writing > 0 && !this.balances.get(orgId)) await this.steady();
    if (this.reservations.has(requestId)) throw new Error(`request ${requestId} already holds a reservation`);
    const stored = this.storedBalance(orgId);
    if (stored === undefined || stored - this.heldFor(orgId) < amount) return false;
    this.reservations.set(requestId, { orgId, amount, createdAt: this.now() });
    this.adjust(orgId, amount);
    return true;
  }

  /** The org's stored balance, read at most once a second (this process's own writes keep it exact). */
  private storedBalance(orgId: string): Micros | undefined {
    const hit = this.balances.get(orgId);
    if (hit) return hit.micros;
    const row = this.stmt.balance.get(orgId);
    if (!row) return undefined;
    this.balances.set(orgId, { micros: row.balance_micros });
    return row.balance_micros;
  }

  /** Forgets a cached balance, after a write through another path (createOrg, addCredits). */
  forget(orgId: string): void {
    this.balances.delete(orgId);
  }

  settle(requestId: string, cost: Micros): Micros {
    const r = this.reservations.get(requestId);
    if (!r) return 0;
    this.reservations.delete(requestId);
    const charged = Math.min(Math.max(cost, 0), r.amount);
    this.adjust(r.orgId, charged - r.amount);
    if (charged > 0) {
      this.pending.push({ orgId: r.orgId, requestId, amount: charged });
      this.arm();
    }
    return charged;
  }

  releaseStale(olderThan: number): number {
    const stale = [...this.reservations].filter(([, r]) => r.createdAt < olderThan).map(([id]) => id);
    for (const id of stale) this.settle(id, 0);
    return stale.length;
  }

  /** Charges not taken by a log batch within `flushMs` are written on their own. */
  private arm(): void {
    this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.flushMs).unref();
  }

  /**
   * Takes the unwritten charges as statements for a batch (the log rows they belong to
   * go in the same transaction). They stay held until `written()`: the stored balance
   * does not show them yet.
   */
  take(): TakenCharges {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    const at = this.now();
    const steps = batch.flatMap((c): ChargeStep[] => [['charge', [c.amount, c.orgId, c.requestId]], ['chargeEntry', [c.orgId, c.requestId, -c.amount, at]]]);
    if (batch.length > 0) this.writing++;
    const ended = (): void => {
      this.writing--;
      const waiters = this.batchEnded;
      this.batchEnded = undefined;
      waiters?.resolve();
    };
    return {
      steps,
      written: () => {
        if (batch.length === 0) return;
        for (const c of batch) {
          this.adjust(c.orgId, -c.amount);
          this.balances.delete(c.orgId); // read again once no batch is being written
        }
        ended();
      },
      unwritten: () => {
        if (batch.length === 0) return;
        this.pending = batch.concat(this.pending);
        ended();
        this.arm();
      },
    };
  }

  /**
   * Resolves when no batch of charges is being written. A balance read from the file
   * agrees with `heldFor` only then: while a batch commits on the writer thread, a read
   * may already show its charges, which are still held here until the batch reports back.
   */
  async steady(): Promise<void> {
    while (this.writing > 0) {
      if (!this.batchEnded) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.batchEnded = { promise, resolve };
      }
      await this.batchEnded.promise;
    }
  }

  /** Writes the unwritten charges now (before an audit, at shutdown); a failed write keeps them for the next. */
  async flush(): Promise<void> {
    const taken = this.take();
    if (taken.steps.length === 0) return;
    try {
      await this.write(taken.steps);
    } catch (err) {
      taken.unwritten();
      throw err;
    }
    taken.written();
  }

  /** Releases the file (call after the last `flush`). */
  close(): void {
    clearInterval(this.renewTimer);
    clearTimeout(this.timer);
    this.stmt.release.run(LEASE, this.holder);
  }
}

/** True for a `host:pid` holder on this host whose process no longer exists. */
function isDeadLocalProcess(holder: string): boolean {
  const [host, pid] = holder.split(':');
  if (host !== hostname() || !pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
