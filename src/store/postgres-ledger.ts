import type { PoolClient } from 'pg';
import { newId } from '../lib/ids.js';
import type { Micros } from '../lib/money.js';
import { APPLY_SLICED, BalanceSlices, returnSlices, type Slice } from './postgres-slices.js';
import type { LogRow, Settlement } from '../model/records.js';

type Query = <R extends object>(sql: string, params?: readonly unknown[]) => Promise<R[]>;
type Scalar = string | number | boolean | null;

export interface PostgresLedgerOptions {
  /** An instance whose heartbeat is older than this is dead: the reaper releases its reservations. */
  instanceTimeoutMs: number;
  /** The backstop: any reservation older than this is released, whoever holds it. */
  reservationMaxAgeMs: number;
  /** Balance slices (postgres-slices.ts): how much one top-up takes; 0 reserves every request on the org's row. */
  sliceMicros?: Micros;
  /** A heartbeat or reaper run that failed (the database away): reported, retried at the next tick. */
  onError?: (err: unknown, what: string) => void;
}

/** An org gets balance slices only while its row keeps this many slices' worth after a top-up. */
const LOW_WATER_SLICES = 8;

/** The database's own clock, in ms: heartbeats are compared on one clock whatever the hosts' clocks say. */
const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/*
 * Applies settlements in one statement: each claims its reservation (DELETE … RETURNING, so
 * a settlement applied twice finds nothing the second time), charges at most the reserved
 * amount, refunds the rest per org (orgs in id order) and records the charge. Returns the
 * request ids whose reservation was found, with what was charged.
 */
const APPLY = `WITH s AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS s(request_id, cost)),
  r AS (DELETE FROM reservations res USING s WHERE res.request_id = s.request_id RETURNING res.request_id, res.org_id, res.amount_micros, s.cost),
  c AS (SELECT request_id, org_id, amount_micros, LEAST(GREATEST(cost, 0), amount_micros) AS charged FROM r),
  refund AS (UPDATE orgs SET balance_micros = orgs.balance_micros + d.refund
    FROM (SELECT org_id, SUM(amount_micros - charged)::bigint AS refund FROM c GROUP BY org_id ORDER BY org_id) d
    WHERE orgs.id = d.org_id AND d.refund > 0),
  l AS (INSERT INTO ledger (org_id, request_id, kind, amount_micros, created_at)
    SELECT org_id, request_id, 'charge', -charged, $3 FROM c WHERE charged > 0 ON CONFLICT DO NOTHING)
  SELECT request_id, charged FROM c`;

/** Releases reservations (refunding their orgs), the rows chosen by `WHERE`, locked in request-id order. */
const release = (where: string): string => `WITH r AS (DELETE FROM reservations WHERE request_id IN (
      SELECT request_id FROM reservations WHERE ${where} ORDER BY request_id FOR UPDATE)
    RETURNING org_id, amount_micros),
  per_org AS (SELECT org_id, SUM(amount_micros)::bigint AS amount FROM r GROUP BY org_id ORDER BY org_id),
  refund AS (UPDATE orgs SET balance_micros = orgs.balance_micros + per_org.amount FROM per_org WHERE orgs.id = per_org.org_id)
  SELECT COUNT(*)::bigint AS n FROM r`;

/**
 * The credit ledger of a gateway instance on PostgreSQL (many instances, one database).
 *
 * - A reservation is made in memory against this instance's slice of the org's balance
 *   (postgres-slices.ts), or, for an org too low for slices, is one statement (debit + a
 *   row tagged with this instance's id). Either survives a crash of the instance as money
 *   held in a row the reaper returns.
 * - A settlement is not written at once: it waits, in memory, for the request-log row it
 *   belongs to and is applied in the transaction that writes that row. Ledger and log
 *   change together or not at all, and a request makes no commit of its own. A failed
 *   write keeps both for the next flush; the request-log writer spills them to a file
 *   while the database stays away.
 * - The instance heartbeats in `gateway_instances`; every instance runs the reaper, one at a
 *   time (a transaction-scoped advisory lock): it releases the reservations of instances
 *   whose heartbeat stopped more than `instanceTimeoutMs` ago (and their slices), and any
 *   reservation older than `reservationMaxAgeMs` (the backstop).
 */
export class PostgresLedger {
  readonly instanceId = newId('ins');
  /** Reserved here and not settled yet: on the org's row (a `reservations` row), or from a slice held here. */
  private readonly held = new Map<string, { orgId: string; amount: Micros; slice?: Slice }>();
  /** Settled here, waiting for their log rows. */
  private readonly pending = new Map<string, Settlement>();
  /**
   * Reservations whose statement failed without an answer (the connection cut, the database
   * restarting): it may have committed. The request was refused, so each is released (if it
   * exists) at the next heartbeat that reaches the database.
   */
  private readonly uncertain = new Set<string>();
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  /** When the last heartbeat reached the database (this instance's clock). */
  private beatAt = 0;
  private readonly slices: BalanceSlices;

  constructor(
    private readonly query: Query,
    private readonly transaction: (work: (client: PoolClient) => Promise<void>) => Promise<void>,
    private readonly now: () => number,
    private readonly opts: PostgresLedgerOptions,
    /** Where reservations go (a pool whose commits do not wait for the WAL flush). */
    private readonly reserveQuery: (sql: string, params: readonly Scalar[]) => Promise<object[]>,
  ) {
    const sliceMicros = opts.sliceMicros ?? 0;
    this.slices = new BalanceSlices((sql, params) => this.query(sql, params), {
      instanceId: this.instanceId, sliceMicros, lowWaterMicros: LOW_WATER_SLICES * sliceMicros, now,
      // Slices are used only while the heartbeat is well inside the reaper's window.
      alive: () => !this.closed && now() - this.beatAt < opts.instanceTimeoutMs / 2,
      onError: opts.onError,
    });
  }

  /** Registers the instance and starts its heartbeat and the reaper. */
  start(): void {
    const every = (ms: number, what: string, fn: () => Promise<unknown>): void => {
      const t = setInterval(() => void fn().catch((err: unknown) => this.opts.onError?.(err, what)), Math.max(ms, 20));
      t.unref();
      this.timers.push(t);
    };
    void this.heartbeat().catch((err: unknown) => this.opts.onError?.(err, 'heartbeat'));
    every(this.opts.instanceTimeoutMs / 3, 'heartbeat', () => this.heartbeat());
    every(this.opts.instanceTimeoutMs / 2, 'reservation reaper', () => this.reap());
  }

  async heartbeat(): Promise<void> {
    if (this.closed) return;
    const lastBeat = this.beatAt;
    if (this.uncertain.size > 0) {
      const ids = [...this.uncertain];
      await this.query(release('request_id = ANY($1::text[]) AND instance_id = $2'), [ids, this.instanceId]);
      for (const id of ids) this.uncertain.delete(id);
    }
    await this.query(`INSERT INTO gateway_instances (id, started_at, heartbeat_at) VALUES ($1, ${DB_NOW}, ${DB_NOW})
      ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`, [this.instanceId]);
    this.beatAt = this.now();
    for (const orgId of await this.slices.tidy(lastBeat)) this.dropSlice(orgId);
  }

  /**
   * A slice the reaper returned (this instance was silent too long): what was charged against
   * it and is not written yet is charged late, from the org's balance, like a settlement
   * whose reservation was released.
   */
  private dropSlice(orgId: string): void {
    for (const [id, s] of this.pending) {
      if (s.orgId === orgId && s.slice === this.instanceId) this.pending.set(id, { requestId: s.requestId, orgId: s.orgId, cost: s.cost });
    }
  }

  /**
   * Releases the reservations of dead instances (and any older than the backstop age);
   * returns how many. Only one instance reaps at a time; the others skip the turn.
   */
  async reap(): Promise<number> {
    let n = 0;
    await this.transaction(async (client) => {
      const [lock] = (await client.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('tollgate.reaper')) AS ok")).rows;
      if (!lock?.ok) return;
      const now = this.now();
      // A reservation younger than the window is never reaped: its instance may not have sent its first heartbeat yet.
      const [row] = (await client.query<{ n: number }>(release(`(instance_id IS NOT NULL AND created_at < $1
          AND instance_id NOT IN (SELECT id FROM gateway_instances WHERE heartbeat_at >= ${DB_NOW} - $3::bigint)) OR created_at < $2`),
      [now - this.opts.instanceTimeoutMs, now - this.opts.reservationMaxAgeMs, this.opts.instanceTimeoutMs])).rows;
      const [slices] = (await client.query<{ n: number }>(returnSlices(`updated_at < $1
          AND instance_id NOT IN (SELECT id FROM gateway_instances WHERE heartbeat_at >= ${DB_NOW} - $2::bigint)`),
      [now - this.opts.instanceTimeoutMs, this.opts.instanceTimeoutMs])).rows;
      await client.query(`DELETE FROM gateway_instances WHERE heartbeat_at < ${DB_NOW} - $1::bigint
        AND NOT EXISTS (SELECT 1 FROM reservations WHERE instance_id = gateway_instances.id)
        AND NOT EXISTS (SELECT 1 FROM balance_slices WHERE instance_id = gateway_instances.id)`, [this.opts.instanceTimeoutMs]);
      n = (row?.n ?? 0) + (slices?.n ?? 0);
    });
    return n;
  }

  async reserve(orgId: string, requestId: string, amount: Micros): Promise<boolean> {
    if (this.held.has(requestId)) throw new Error(`request ${requestId} already holds a reservation`);
    const slice = await this.slices.take(orgId, amount);
    if (slice) {
      this.held.set(requestId, { orgId, amount, slice });
      return true;
    }
    let rows: object[];
    try {
      rows = await this.reserveQuery(`WITH debit AS (
          UPDATE orgs SET balance_micros = balance_micros - $3::bigint WHERE id = $1 AND balance_micros >= $3::bigint RETURNING id)
        INSERT INTO reservations (request_id, org_id, amount_micros, created_at, instance_id) SELECT $2, id, $3, $4, $5 FROM debit RETURNING request_id`,
      [orgId, requestId, amount, this.now(), this.instanceId]);
    } catch (err) {
      this.uncertain.add(requestId);
      throw err;
    }
    if (rows.length > 0) this.held.set(requestId, { orgId, amount });
    return rows.length > 0;
  }

  /**
   * Settles a reservation made here: what is charged is known now (at most the reserved
   * amount); the write waits for the request's log row. Undefined for a reservation this
   * instance does not hold.
   */
  settle(requestId: string, cost: Micros): Micros | undefined {
    const r = this.held.get(requestId);
    if (!r) return undefined;
    this.held.delete(requestId);
    const charged = Math.min(Math.max(cost, 0), r.amount);
    // A slice the reaper took meanwhile: the charge is late (from the org's balance), and the refund was returned with the slice.
    const sliced = r.slice !== undefined && this.slices.refund(r.slice, r.amount - charged);
    this.pending.set(requestId, { requestId, orgId: r.orgId, cost: charged, ...(sliced ? { slice: this.instanceId } : {}) });
    return charged;
  }

  /** Settlements waiting for these rows (a copy: they stay pending until written). */
  settlementsFor(requestIds: Iterable<string>): Settlement[] {
    const out: Settlement[] = [];
    for (const id of requestIds) {
      const s = this.pending.get(id);
      if (s) out.push(s);
    }
    return out;
  }

  /** Takes in settlements spilled by a process that died with the database away; they wait for their rows. */
  adopt(settlements: readonly Settlement[]): void {
    for (const s of settlements) this.pending.set(s.requestId, s);
  }

  /**
   * In the caller's transaction: writes `rows` (with `insertRows`) and applies their
   * settlements; returns the settlements applied (call `written` after the commit). A late
   * settlement, whose reservation was already released, is charged from the balance, never
   * below zero, and its row says what was charged.
   */
  async apply(client: PoolClient, rows: readonly LogRow[], insertRows: (rows: LogRow[]) => Promise<void>): Promise<Settlement[]> {
    const taken = this.settlementsFor(rows.map((r) => r.requestId));
    if (taken.length === 0) {
      await insertRows([...rows]);
      return taken;
    }
    const at = this.now();
    const late = new Map<string, Micros>();
    // Slices first: each pays from its own row (this instance's, or a dead one's for adopted settlements).
    const sliced = taken.filter((s) => s.slice !== undefined);
    if (sliced.length > 0) {
      const missed = (await client.query<{ request_id: string }>(APPLY_SLICED, [sliced.map((s) => s.requestId), sliced.map((s) => s.slice),
        sliced.map((s) => s.orgId), sliced.map((s) => s.cost), at])).rows;
      const byId = new Map(sliced.map((s) => [s.requestId, s]));
      for (const { request_id: id } of missed) late.set(id, await this.lateCharge(client, byId.get(id)!, at));
    }
    // Then the reservations still there are locked (their rows only); the org rows are updated
    // last, so a busy org's balance is locked only for the last statement and the commit.
    const onRow = taken.filter((s) => s.slice === undefined);
    const held = new Set(onRow.length === 0 ? [] : (await client.query<{ request_id: string }>('SELECT request_id FROM reservations WHERE request_id = ANY($1::text[]) FOR UPDATE',
      [onRow.map((s) => s.requestId)])).rows.map((r) => r.request_id));
    for (const s of onRow) if (!held.has(s.requestId)) late.set(s.requestId, await this.lateCharge(client, s, at));
    await insertRows(rows.map((row) => {
      const charged = late.get(row.requestId);
      if (charged === undefined || charged >= row.costMicros) return row;
      return { ...row, costMicros: charged, extra: { ...row.extra, uncharged_micros: row.costMicros - charged + ((row.extra?.uncharged_micros as number | undefined) ?? 0) } };
    }));
    const onHeld = onRow.filter((s) => held.has(s.requestId));
    if (onHeld.length > 0) await client.query(APPLY, [onHeld.map((s) => s.requestId), onHeld.map((s) => s.cost), at]);
    return taken;
  }

  /** A settlement whose reservation is gone (the reaper released it): charged now, once, as far as the balance goes. */
  private async lateCharge(client: PoolClient, s: Settlement, at: number): Promise<Micros> {
    const [prior] = (await client.query<{ charged: number }>("SELECT -amount_micros AS charged FROM ledger WHERE kind = 'charge' AND request_id = $1", [s.requestId])).rows;
    if (prior) return prior.charged;
    if (s.cost <= 0) return 0;
    const [org] = (await client.query<{ balance_micros: number }>('SELECT balance_micros FROM orgs WHERE id = $1 FOR UPDATE', [s.orgId])).rows;
    const charged = Math.min(s.cost, org?.balance_micros ?? 0);
    if (charged <= 0) return 0;
    await client.query('UPDATE orgs SET balance_micros = balance_micros - $2::bigint WHERE id = $1', [s.orgId, charged]);
    await client.query("INSERT INTO ledger (org_id, request_id, kind, amount_micros, note, created_at) VALUES ($1, $2, 'charge', $3, 'settled after its reservation was released', $4)",
      [s.orgId, s.requestId, -charged, at]);
    return charged;
  }

  /** After the commit: the applied settlements are done. */
  written(taken: readonly Settlement[]): void {
    for (const s of taken) this.pending.delete(s.requestId);
  }

  /** What this process holds of the org's money from its slices: reserved, or charged and not written. */
  heldFor(orgId: string): Micros {
    let n = 0;
    for (const r of this.held.values()) if (r.orgId === orgId && r.slice && this.slices.holds(r.slice)) n += r.amount;
    for (const s of this.pending.values()) if (s.orgId === orgId && s.slice === this.instanceId) n += s.cost;
    return n;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * At shutdown (after the request log's last flush): the reservations still held here are
   * released and the instance leaves. Settlements still waiting (their rows could not be
   * written: the database away) stay with the spill file, and their reservations with the
   * reaper; a settlement is never written without its row.
   */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.closed = true;
    try {
      const onRow = [...this.held].filter(([, r]) => r.slice === undefined).map(([id]) => id);
      if (onRow.length > 0) await this.query(release('request_id = ANY($1::text[])'), [onRow]);
      this.held.clear();
      // With charges still waiting for their rows (the database away), the slices stay for them, then for the reaper.
      if (this.pending.size === 0) {
        await this.slices.returnAll();
        await this.query('DELETE FROM gateway_instances WHERE id = $1', [this.instanceId]);
      }
    } catch (err) {
      // The database away: the reaper of another instance (or of the next start) releases them.
      this.opts.onError?.(err, 'releasing the reservations at shutdown');
    }
  }
}
