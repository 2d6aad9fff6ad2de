import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import type { Micros } from '../money.js';
import { TtlCache } from '../ttl-cache.js';

interface Reservation { orgId: string; amount: Micros; createdAt: number }
interface Charge { orgId: string; requestId: string; amount: Micros }

const LEASE = 'sqlite-ledger';
const LEASE_TTL_MS = 15_000;
/** Orgs whose stored balance is kept; past it the least recently used is read again. */
const MAX_CACHED_BALANCES = 10_000;

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
  private readonly renewTimer: NodeJS.Timeout;
  private readonly holder = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  private readonly stmt;

  constructor(
    private readonly db: Database.Database, private readonly now: () => number, private readonly flushMs = 100,
    balanceTtlMs = 1000,
  ) {
    this.balances = new TtlCache<string, { micros: Micros }>({ max: MAX_CACHED_BALANCES, ttlMs: balanceTtlMs, now: Date.now });
    this.stmt = {
      balance: db.prepare<[string], { balance_micros: number }>('SELECT balance_micros FROM orgs WHERE id = ?'),
      charge: db.prepare('UPDATE orgs SET balance_micros = MAX(balance_micros - ?, 0) WHERE id = ?'),
      ledger: db.prepare("INSERT INTO ledger (org_id, request_id, kind, amount_micros, note, created_at) VALUES (?, ?, 'charge', ?, NULL, ?)"),
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

  reserve(orgId: string, requestId: string, amount: Micros): boolean {
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
      this.timer ??= setTimeout(() => this.db.transaction(() => this.writePending())(), this.flushMs).unref();
    }
    return charged;
  }

  releaseStale(olderThan: number): number {
    const stale = [...this.reservations].filter(([, r]) => r.createdAt < olderThan).map(([id]) => id);
    for (const id of stale) this.settle(id, 0);
    return stale.length;
  }

  /** Writes the unwritten charges; call inside a transaction (with the log rows they belong to). */
  writePending(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    const at = this.now();
    for (const c of batch) {
      this.stmt.charge.run(c.amount, c.orgId);
      this.stmt.ledger.run(c.orgId, c.requestId, -c.amount, at);
      this.adjust(c.orgId, -c.amount);
      const cached = this.balances.peek(c.orgId);
      if (cached) cached.micros = Math.max(cached.micros - c.amount, 0);
    }
  }

  close(): void {
    clearInterval(this.renewTimer);
    this.db.transaction(() => this.writePending())();
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
