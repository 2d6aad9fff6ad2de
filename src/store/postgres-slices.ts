import type { Micros } from '../lib/money.js';

type Scalar = string | number | boolean | null;
type Run = (sql: string, params: readonly (Scalar | readonly Scalar[])[]) => Promise<object[]>;

/** What an instance holds of one org's balance, in memory. */
export interface Slice {
  readonly orgId: string;
  /** Free to reserve against: the slice row's amount less what is reserved and charged-not-written here. */
  free: Micros;
  /** The last reservation made from it: a slice unused for a heartbeat gives its free part back. */
  usedAt: number;
  /** When its row was first committed (a slice newer than a read of the rows may be missing from it). */
  readonly since: number;
}

export interface BalanceSlicesOptions {
  instanceId: string;
  /** How much one top-up takes (at least what the reservation needs); 0 turns slices off. */
  sliceMicros: Micros;
  /** A slice is taken only if the org's row keeps this much after it; below it the org's requests reserve on its row. */
  lowWaterMicros: Micros;
  now: () => number;
  /** True while this instance's heartbeat is recent: a slice is used only then (the reaper returns a silent instance's slices). */
  alive: () => boolean;
  onError?: (err: unknown, what: string) => void;
}

/** An org refused a slice (its balance is low, or the top-up failed) reserves on its row this long before asking again. */
const DIRECT_MS = 5_000;
/** Concurrent reservations that miss the slice wait for one top-up, then try again; after this many, the org's row. */
const TRIES = 3;

/** Moves money from the org's row into this instance's slice row; no row back: the org keeps too little. */
const TOP_UP = `WITH u AS (UPDATE orgs SET balance_micros = balance_micros - $2::bigint WHERE id = $1 AND balance_micros >= $3::bigint RETURNING id)
  INSERT INTO balance_slices (instance_id, org_id, amount_micros, updated_at) SELECT $4, id, $2, $5 FROM u
  ON CONFLICT (instance_id, org_id) DO UPDATE SET amount_micros = balance_slices.amount_micros + EXCLUDED.amount_micros, updated_at = EXCLUDED.updated_at
  RETURNING org_id`;

/** Gives part of this instance's slices back to their orgs (per org: [org ids], [amounts]). */
const GIVE_BACK = `WITH d AS (SELECT * FROM unnest($2::text[], $3::bigint[]) AS d(org_id, amount)),
  s AS (UPDATE balance_slices b SET amount_micros = b.amount_micros - d.amount FROM d
    WHERE b.instance_id = $1 AND b.org_id = d.org_id AND b.amount_micros >= d.amount RETURNING b.org_id, d.amount)
  UPDATE orgs SET balance_micros = orgs.balance_micros + s.amount FROM s WHERE orgs.id = s.org_id`;

/** Returns slice rows to their orgs, the rows chosen by `WHERE` (orgs updated in id order). */
export const returnSlices = (where: string): string => `WITH s AS (DELETE FROM balance_slices WHERE ${where} RETURNING org_id, amount_micros),
  per_org AS (SELECT org_id, SUM(amount_micros)::bigint AS amount FROM s GROUP BY org_id ORDER BY org_id),
  refund AS (UPDATE orgs SET balance_micros = orgs.balance_micros + per_org.amount FROM per_org WHERE orgs.id = per_org.org_id)
  SELECT COUNT(*)::bigint AS n FROM s`;

/**
 * Charges settlements made against slices, in the caller's transaction: per (instance, org)
 * the slice row pays what was charged and one ledger row per request records it. A request
 * already charged (a batch written, then retried) is skipped, so its slice pays once. Returns
 * the request ids whose slice row is gone (the reaper returned it): they are charged late,
 * from the org's balance.
 */
export const APPLY_SLICED = `WITH d AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS d(request_id, instance_id, org_id, charged)),
  fresh AS (SELECT d.* FROM d WHERE NOT EXISTS (SELECT 1 FROM ledger g WHERE g.kind = 'charge' AND g.request_id = d.request_id)),
  per AS (SELECT instance_id, org_id, SUM(charged)::bigint AS amount FROM fresh GROUP BY instance_id, org_id),
  u AS (UPDATE balance_slices b SET amount_micros = b.amount_micros - per.amount FROM per
    WHERE b.instance_id = per.instance_id AND b.org_id = per.org_id AND b.amount_micros >= per.amount RETURNING b.instance_id, b.org_id),
  l AS (INSERT INTO ledger (org_id, request_id, kind, amount_micros, created_at)
    SELECT f.org_id, f.request_id, 'charge', -f.charged, $5 FROM fresh f JOIN u USING (instance_id, org_id) WHERE f.charged > 0)
  SELECT f.request_id FROM fresh f LEFT JOIN u USING (instance_id, org_id) WHERE u.org_id IS NULL`;

/**
 * The slices of org balances this instance holds (PostgreSQL, many instances). Reserving
 * against a slice is a subtraction in memory; the org's balance row is touched only to top
 * a slice up (one statement per `sliceMicros` of spending) and to give it back. The money
 * of a slice row is either free here, reserved by a request in flight here, or charged and
 * waiting for its log row: so the row is never less than what this instance may still
 * charge against it.
 *
 * An org whose row would fall below `lowWaterMicros` gets no slice: its requests reserve on
 * the row, one statement each, so the last of its money is not split between instances.
 */
export class BalanceSlices {
  private readonly slices = new Map<string, Slice>();
  private readonly topUps = new Map<string, Promise<void>>();
  /** Orgs refused a slice, until when. */
  private readonly direct = new Map<string, number>();

  constructor(private readonly run: Run, private readonly opts: BalanceSlicesOptions) {}

  /** Reserves `amount` from the org's slice (topping it up if short); undefined: reserve on the org's row instead. */
  async take(orgId: string, amount: Micros): Promise<Slice | undefined> {
    if (this.opts.sliceMicros <= 0) return undefined;
    for (let i = 0; i < TRIES && this.opts.alive(); i++) {
      const s = this.slices.get(orgId);
      if (s && s.free >= amount) {
        s.free -= amount;
        s.usedAt = this.opts.now();
        return s;
      }
      if ((this.direct.get(orgId) ?? 0) > this.opts.now()) return undefined;
      await (this.topUps.get(orgId) ?? this.startTopUp(orgId, amount - (s?.free ?? 0)));
    }
    return undefined;
  }

  /** Settled: what was reserved and not charged is free again (if the slice is still this instance's); false when it is not. */
  refund(slice: Slice, amount: Micros): boolean {
    if (!this.holds(slice)) return false;
    slice.free += amount;
    return true;
  }

  /** True if this slice is still held here. */
  holds(slice: Slice): boolean {
    return this.slices.get(slice.orgId) === slice;
  }

  /**
   * At each heartbeat: slices unused since `idleSince` give their free part back to the org,
   * and slices whose row is gone (the reaper took it while this instance was silent) are
   * dropped; returns the orgs dropped, whose charges not yet written are now late.
   */
  async tidy(idleSince: number): Promise<string[]> {
    if (this.slices.size === 0) return [];
    const idle = [...this.slices.values()].filter((s) => s.usedAt < idleSince && s.free > 0);
    if (idle.length > 0) {
      const amounts = idle.map((s) => s.free);
      // Freed in memory first: if the statement fails, the money stays in the row (returned at shutdown or by the reaper), never spent twice.
      for (const s of idle) s.free = 0;
      await this.run(GIVE_BACK, [this.opts.instanceId, idle.map((s) => s.orgId), amounts]);
    }
    const readAt = this.opts.now();
    const rows = (await this.run('SELECT org_id FROM balance_slices WHERE instance_id = $1', [this.opts.instanceId])) as { org_id: string }[];
    const present = new Set(rows.map((r) => r.org_id));
    const dropped = [...this.slices.values()].filter((s) => s.since < readAt && !present.has(s.orgId)).map((s) => s.orgId);
    for (const orgId of dropped) this.slices.delete(orgId);
    return dropped;
  }

  /** At shutdown (nothing left to write): every slice row of this instance goes back to its org. */
  async returnAll(): Promise<void> {
    this.slices.clear();
    await this.run(returnSlices('instance_id = $1'), [this.opts.instanceId]);
  }

  private startTopUp(orgId: string, need: Micros): Promise<void> {
    const p = this.topUp(orgId, need)
      .catch((err: unknown) => {
        // The statement may have committed: then the money waits in the row until shutdown or the reaper.
        this.direct.set(orgId, this.opts.now() + DIRECT_MS);
        this.opts.onError?.(err, 'taking a balance slice');
      })
      .finally(() => this.topUps.delete(orgId));
    this.topUps.set(orgId, p);
    return p;
  }

  private async topUp(orgId: string, need: Micros): Promise<void> {
    const take = Math.max(this.opts.sliceMicros, need);
    const at = this.opts.now();
    const rows = await this.run(TOP_UP, [orgId, take, take + this.opts.lowWaterMicros, this.opts.instanceId, at]);
    if (rows.length === 0) {
      this.direct.set(orgId, this.opts.now() + DIRECT_MS);
      return;
    }
    this.direct.delete(orgId);
    const s = this.slices.get(orgId);
    if (s) s.free += take;
    else this.slices.set(orgId, { orgId, free: take, usedAt: at, since: this.opts.now() });
  }
}
