import { IdPool } from '../lib/ids.js';
import { LEASE_FIELDS, LEASE_SCRIPT } from './lease-scripts.js';
import { spendCounterName } from '../model/periods.js';
import type { AdmitRequest, LimitHeaders, LimitScope, LimitSpec, Metered } from '../model/limits.js';
import { limitHeaders, tokenReservation, type ScopeReading } from './verdict.js';

/*
 * Lease mode of the Redis driver (docs/limits.md, "Exact and lease mode"). Each instance
 * leases a share of a scope's rpm, tpm, slots and budget (lease-scripts.ts) and admits
 * against it in memory, with no Redis call; a request the lease cannot cover takes the
 * exact path (one admit script), which also starts a lease for the next ones. Leases
 * are used for `leaseMs` (1 s) and then returned (what they were used for is written to
 * Redis) and, if they were used, renewed — in the background, never on a request's path.
 */

/** A reservation the settle script undoes: one scope's part of an exact hold. */
export interface HoldPart {
  base: string;
  tokens: number | undefined;
  slot: boolean;
  cost: number | undefined;
  spendKey: string | undefined;
}

interface Flight {
  tokens: number | undefined;
  slot: boolean;
  cost: number | undefined;
}

interface Grant {
  rq: number;
  rqUsed: number;
  rqOldest: number | null;
  tk: number;
  tkUsed: number;
  tkOldest: number | null;
  cc: number;
  b: number;
}

class Lease {
  open = true;
  admits = 0;
  rqUsed = 0;
  tkUsed = 0;
  tkSettled = 0;
  ccUsed = 0;
  bHeld = 0;
  bSpent = 0;
  returnAttempts = 0;
  /** Requests admitted against the lease and not settled yet, by hold id. */
  readonly flights = new Map<string, Flight>();
  constructor(
    readonly id: string, readonly scope: LimitScope, readonly base: string, readonly limits: LimitSpec,
    /** Redis time of the grant, and the local time it arrived (a lease admits until `until`, local). */
    readonly at: number, readonly receivedAt: number, readonly until: number,
    readonly g: Grant, readonly spendKey: string | undefined,
  ) {}
}

/** One scope's part of a request admitted by lease. */
export interface LeasePart {
  readonly lease: Lease;
  readonly holdId: string;
}

interface Slot {
  lease: Lease | undefined;
  busy: boolean;
  /** No lease asked before this (local ms): auto chose exact, nothing was left, or a call failed. */
  quietUntil: number;
}

export interface LeaseBookOptions {
  call: (script: string, args: ReadonlyArray<string | number>) => Promise<unknown>;
  prefix: string;
  windowMs: number;
  holdTtlMs: number;
  /** How long a lease admits before it is returned (and renewed if used). Default 1 s. */
  leaseMs?: number | undefined;
  /** How long Redis keeps an unreturned lease's slots and budget (an instance that died). Default 10 s. */
  leaseTtlMs?: number | undefined;
  /** Tests only: Redis clock override (as the exact scripts). */
  clock?: (() => number) | undefined;
  /** Whether the Redis client is connected: a lease admits only then, so a Redis known to be down gets exact mode's failure modes at once. */
  connected: () => boolean;
}

/** Left to the rule, a scope is leased when its rpm and max_concurrent are at least this × the instances (leases are 1 % of a limit per instance). */
const AUTO_FACTOR = 1000;
const QUIET_EXACT_MS = 5_000;
const QUIET_FULL_MS = 250;
const MAX_RETURN_ATTEMPTS = 30;

const sameLimits = (a: LimitSpec, b: LimitSpec): boolean =>
  a.rpm === b.rpm && a.tpm === b.tpm && a.maxConcurrent === b.maxConcurrent && a.budget?.micros === b.budget?.micros && a.budget?.period === b.budget?.period && a.mode === b.mode;

export class LeaseBook {
  private readonly slots = new Map<string, Slot>();
  private readonly ids = new IdPool();
  private readonly instanceId: string;
  private readonly leaseMs: number;
  private readonly leaseTtlMs: number;
  private readonly pending = new Set<Promise<unknown>>();
  private closed = false;
  /** Instances leasing on this Redis, as the last lease script counted them (its heartbeat set). */
  private instances = 1;
  /** Counts for stats and tests: admits taken locally and lease scripts run. */
  readonly counts = { local: 0, scripts: 0 };

  constructor(private readonly opts: LeaseBookOptions) {
    this.instanceId = this.ids.next('i', 16);
    this.leaseMs = opts.leaseMs ?? 1_000;
    this.leaseTtlMs = opts.leaseTtlMs ?? 10_000;
  }

  /** Admits the request against the leases of all its scopes, or returns undefined (take the exact path). Synchronous. */
  tryAdmit(req: AdmitRequest, holdId: string): { parts: LeasePart[]; headers: LimitHeaders } | undefined {
    if (!this.opts.connected()) return undefined;
    const now = Date.now();
    const leases: Lease[] = [];
    for (const scope of req.scopes) {
      const lease = this.slots.get(scope.id)?.lease;
      if (!lease?.open || now >= lease.until || !sameLimits(lease.limits, scope.limits) || !fits(lease, req)) return undefined;
      leases.push(lease);
    }
    const readings: ScopeReading[] = [];
    const parts = leases.map((lease): LeasePart => {
      const { tpm, maxConcurrent, budget, rpm } = lease.limits;
      const tokens = tpm === undefined ? undefined : tokenReservation(req.tokens, tpm);
      const reading: ScopeReading = {};
      if (rpm !== undefined) reading.rpm = { used: lease.g.rqUsed - lease.g.rq + lease.rqUsed, oldest: lease.g.rqOldest ?? lease.at, wait: null };
      if (tokens !== undefined) reading.tpm = { used: lease.g.tkUsed - lease.g.tk + lease.tkUsed, oldest: lease.g.tkOldest ?? lease.at, wait: null };
      readings.push(reading);
      lease.admits++;
      if (rpm !== undefined) lease.rqUsed++;
      if (tokens !== undefined) lease.tkUsed += tokens;
      if (maxConcurrent !== undefined) lease.ccUsed++;
      if (budget) lease.bHeld += req.costMicros;
      lease.flights.set(holdId, { tokens, slot: maxConcurrent !== undefined, cost: budget ? req.costMicros : undefined });
      return { lease, holdId };
    });
    this.counts.local++;
    const first = leases[0]!;
    const headers = limitHeaders(req, readings, { now: first.at + (now - first.receivedAt), windowMs: this.opts.windowMs }, true);
    this.consider(req.scopes, req);
    return { parts, headers };
  }

  /** Starts a lease for each lease-capable scope that has none usable or whose lease runs low. Never waits. */
  consider(scopes: readonly LimitScope[], need: { tokens: number; costMicros: number }): void {
    if (this.closed) return;
    // A request is admitted locally only when every scope of it is: a lease of one scope beside an exact one would only hold capacity.
    if (!scopes.every((s) => wantsLease(s.limits, this.instances))) return;
    const now = Date.now();
    for (const scope of scopes) {
      let slot = this.slots.get(scope.id);
      if (!slot) this.slots.set(scope.id, (slot = { lease: undefined, busy: false, quietUntil: 0 }));
      if (slot.busy || now < slot.quietUntil) continue;
      const lease = slot.lease;
      if (lease?.open && now < lease.until && sameLimits(lease.limits, scope.limits) && !low(lease)) continue;
      this.track(this.renew(scope, slot, need));
    }
  }

  /**
   * Settles a request's lease parts: in memory while its lease is open; a part whose
   * lease was returned meanwhile became an ordinary hold in Redis, returned here for the
   * settle script.
   */
  settle(parts: readonly LeasePart[], metered: Metered): HoldPart[] {
    const exact: HoldPart[] = [];
    for (const { lease, holdId } of parts) {
      const f = lease.flights.get(holdId);
      if (!f) continue;
      lease.flights.delete(holdId);
      if (!lease.open) {
        exact.push({ base: lease.base, tokens: f.tokens, slot: f.slot, cost: f.cost, spendKey: f.cost === undefined ? undefined : lease.spendKey });
        continue;
      }
      if (f.tokens !== undefined) {
        lease.tkUsed += metered.tokens - f.tokens;
        lease.tkSettled += metered.tokens;
      }
      if (f.slot) lease.ccUsed--;
      if (f.cost !== undefined) {
        lease.bHeld -= f.cost;
        lease.bSpent += Math.min(metered.costMicros, f.cost);
      }
    }
    return exact;
  }

  /** Returns every lease (what it was used for is written; the rest goes back) and waits for the calls in flight. */
  async close(): Promise<void> {
    this.closed = true;
    for (const slot of this.slots.values()) {
      const lease = slot.lease;
      slot.lease = undefined;
      if (lease) this.track(this.retire(lease));
    }
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private track(p: Promise<unknown>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Asks for a new lease; the one it replaces goes on admitting until the answer, then is returned. */
  private async renew(scope: LimitScope, slot: Slot, need: Need): Promise<void> {
    slot.busy = true;
    const id = this.ids.next('L', 12);
    const base = `${this.opts.prefix}${scope.id}`;
    try {
      const reply = await this.run([this.scopeArgs(scope, base, id, undefined, need)]);
      const now = Date.now();
      const v = reply.slice(1, 1 + LEASE_FIELDS);
      const old = slot.lease;
      const { budget } = scope.limits;
      if (v[0] === 1) {
        const at = v[1]!;
        const g: Grant = { rq: v[2]!, rqUsed: v[3]!, rqOldest: opt(v[4]), tk: v[5]!, tkUsed: v[6]!, tkOldest: opt(v[7]), cc: v[8]!, b: v[9]! };
        const spendKey = budget ? `${base}:${spendCounterName(budget.period, v[10]!)}` : undefined;
        const lease = new Lease(id, scope, base, { ...scope.limits }, at, now, now + this.leaseMs, g, spendKey);
        if (this.closed) this.track(this.retire(lease)); // granted while closing: straight back
        else {
          slot.lease = lease;
          setTimeout(() => this.expire(scope, slot, lease), this.leaseMs).unref();
        }
      } else {
        slot.lease = undefined;
        slot.quietUntil = now + (v[0] === 2 ? QUIET_EXACT_MS : QUIET_FULL_MS);
      }
      if (old) this.track(this.retire(old));
    } catch {
      // Redis away: the exact path decides (and degrades) meanwhile; a lease past its time is returned when Redis answers.
      slot.quietUntil = Date.now() + QUIET_FULL_MS;
      const old = slot.lease;
      if (old && Date.now() >= old.until) {
        slot.lease = undefined;
        this.track(this.retire(old));
      }
    } finally {
      slot.busy = false;
    }
  }

  /** The lease's time is up: renewed if it was used (the scope is busy), else just returned. */
  private expire(scope: LimitScope, slot: Slot, lease: Lease): void {
    if (slot.lease !== lease) return;
    if (lease.admits > 0 && !this.closed && !slot.busy) {
      this.track(this.renew(scope, slot, NO_NEED));
      return;
    }
    if (slot.busy) return; // the renewal in flight retires it
    slot.lease = undefined;
    if (this.slots.get(scope.id) === slot) this.slots.delete(scope.id); // idle: nothing kept for it
    this.track(this.retire(lease));
  }

  /** Closes the lease and writes what it was used for; retried (once-only in Redis) while Redis does not answer. */
  private async retire(lease: Lease): Promise<void> {
    lease.open = false;
    for (;;) {
      try {
        await this.run([this.scopeArgs(lease.scope, lease.base, '', lease, NO_NEED)]);
        return;
      } catch {
        if (++lease.returnAttempts >= MAX_RETURN_ATTEMPTS || this.closed) return; // its slots and budget expire after the lease TTL
        await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
      }
    }
  }

  private scopeArgs(scope: LimitScope, base: string, newId: string, ret: Lease | undefined, need: Need): Array<string | number> {
    const { rpm, tpm, maxConcurrent, budget, mode } = ret?.limits ?? scope.limits;
    const args: Array<string | number> = [base, rpm ?? '', tpm ?? '', maxConcurrent ?? '', budget?.micros ?? '', budget?.period ?? '', mode === 'lease' ? 'lease' : '', ret ? '0' : '1', newId];
    if (!ret) {
      const { tpm: t } = scope.limits;
      args.push('', '', '', '', '', '', '', '', '', '', t === undefined ? 0 : tokenReservation(need.tokens, t), need.costMicros, 0);
      return args;
    }
    args.push(ret.id, ret.at, ret.g.rq, ret.rqUsed, ret.g.tk, ret.tkSettled, ret.g.cc, ret.g.b, ret.bSpent, ret.spendKey ?? '', 0, 0, ret.flights.size);
    for (const [holdId, f] of ret.flights) args.push(holdId, f.tokens ?? '', f.slot ? '1' : '', f.cost ?? '');
    return args;
  }

  private async run(scopes: Array<Array<string | number>>): Promise<number[]> {
    this.counts.scripts++;
    const head = [this.opts.clock ? String(this.opts.clock()) : '', this.instanceId, `${this.opts.prefix}instances`, this.opts.windowMs, this.opts.holdTtlMs, this.leaseTtlMs, scopes.length];
    const raw = await this.opts.call(LEASE_SCRIPT, [...head, ...scopes.flat()]);
    if (!Array.isArray(raw) || raw.length !== 1 + scopes.length * LEASE_FIELDS) throw new Error(`unexpected reply from the lease script: ${JSON.stringify(raw)}`);
    const v = raw.map(Number);
    this.instances = Math.max(1, v[0]!);
    return v;
  }
}

/**
 * The mode rule (docs/limits.md): `exact` never leases, `lease` always does; left out, a
 * scope is leased when it limits requests or slots and each of those limits is at least
 * 1000 × the instances leasing (a lease, 1 % of the limit per instance, is then at least
 * 10 requests: smaller ones would cost a script every few requests and gain nothing). tpm and budget alone stay exact unless set to lease: how much of them a
 * request takes varies, so only the operator knows whether a share would distort them.
 * The lease script applies the same rule with the instance count it reads.
 */
export function wantsLease(l: LimitSpec, instances: number): boolean {
  if (l.mode !== undefined) return l.mode === 'lease';
  if (l.rpm === undefined && l.maxConcurrent === undefined) return false;
  return (l.rpm === undefined || l.rpm >= AUTO_FACTOR * instances) && (l.maxConcurrent === undefined || l.maxConcurrent >= AUTO_FACTOR * instances);
}

interface Need {
  tokens: number;
  costMicros: number;
}
const NO_NEED: Need = { tokens: 0, costMicros: 0 };

const opt = (x: number | undefined): number | null => (x === undefined || x === -1 ? null : x);

/** Whether the lease has room for the request in every kind it limits. */
function fits(lease: Lease, req: AdmitRequest): boolean {
  const { rpm, tpm, maxConcurrent, budget } = lease.limits;
  if (rpm !== undefined && lease.rqUsed + 1 > lease.g.rq) return false;
  if (tpm !== undefined && lease.tkUsed + tokenReservation(req.tokens, tpm) > lease.g.tk) return false;
  if (maxConcurrent !== undefined && lease.ccUsed + 1 > lease.g.cc) return false;
  if (budget && lease.bHeld + lease.bSpent + req.costMicros > lease.g.b) return false;
  return true;
}

/** Less than half of some kind left: time to ask for the next lease (this one admits meanwhile). */
function low(lease: Lease): boolean {
  const { rpm, tpm, maxConcurrent, budget } = lease.limits;
  return (rpm !== undefined && lease.rqUsed * 2 > lease.g.rq) || (tpm !== undefined && lease.tkUsed * 2 > lease.g.tk)
    || (maxConcurrent !== undefined && lease.ccUsed * 2 > lease.g.cc) || (budget !== undefined && (lease.bHeld + lease.bSpent) * 2 > lease.g.b);
}

