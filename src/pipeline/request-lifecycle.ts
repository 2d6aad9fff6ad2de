import type { FastifyReply } from 'fastify';
import { cutByServer, type Exchange } from './exchange.js';
import { GatewayError } from '../lib/errors.js';
import type { HookRegistry } from './hooks.js';
import type { Admission } from './admission.js';
import { logRowOf } from './log-row.js';
import { picosToMicros, type Micros } from '../lib/money.js';
import type { Meter, Metered } from './plugin.js';
import type { LogRow, Store } from '../store/types.js';
import type { ExchangeObserver } from './events.js';

/*
 * One request's money and its log row: reserve → settle → log.
 *
 * THE INVARIANT. A request is charged at most once, and every request gets exactly one
 * request-log row, queued only after its charge is settled, so every org's balance
 * change equals the sum of its logged costs. Three flags of a RequestLifecycle carry it,
 * and nothing outside this file sets them:
 *   `settled`  the reservation became a charge (or was released): never twice;
 *   `billing`  a model request's handler still runs: its row waits for the bill;
 *   `logged`   the row was queued: never twice.
 * A model request is in `RequestLifecycles.unlogged` from its handler's start until its
 * row is queued; the shutdown waits for that set to empty before the last log flush.
 *
 * How each path reaches it (the pipeline calls `reserve`, `admitted`, `record` and
 * `finish`; the server calls `open`, `charged` and `log`):
 * - Success: the plugin's result is `record`ed, `finish(true)` settles the credit at its
 *   cost and the limits at its usage; the handler ends (`billing` off), and the row is
 *   queued when the response finishes (fastify's onResponse) or, when the response had
 *   already finished before the settle, at once by `charged`.
 * - Error before the reply: nothing was recorded, `finish(false)` settles the reservation
 *   at 0 and releases the limits; the error body is sent and onResponse queues the row.
 * - Error after the reply started (the plugin threw mid-stream): `finish(false)` records
 *   and settles what the plugin's meter (`RespondContext.meter.sofar`) said the reply cost
 *   so far — a stream's delivered tokens — or 0 when it said nothing; the response ends
 *   and the row is queued with the status already sent.
 * - Client gone (it hung up mid-reply or before the upstream answered): the response's
 *   `close` aborts the exchange (the upstream call is cancelled); the plugin returns what
 *   was delivered, `finish` charges it, and `charged` queues the row (status 499 when no
 *   header had gone out) since onResponse never runs for a response that did not finish.
 * - Drain timeout: `cutAll` aborts every open exchange with `drain_timeout`; each ends
 *   down the same paths (a stream billed for what was delivered, a reply not yet started
 *   the 503), and the close waits for `unlogged` to empty.
 * - Settle throwing (the store away): `settled` stays false, the pipeline's catch calls
 *   `finish(false)`, which settles again at the same recorded cost, once; a settle that
 *   fails again leaves the reservation to the store's reaper and the row is still queued.
 * - Server close: the app stops taking requests, the handlers still running end (cut at
 *   the deadline), `waitForRows` waits for their rows, then the log is flushed.
 */

export interface LifecycleServices {
  store: Pick<Store, 'reserve' | 'settle'>;
  telemetry: ExchangeObserver | undefined;
  log: { enqueue(row: LogRow): void };
  /** Runs the `post-billing` hooks once a row is queued; absent in unit tests. */
  hooks?: HookRegistry;
}

/** A result's cost in micro-USD: given so, or rounded from pico-USD (once, here). */
export function meteredMicros(m: Metered): Micros {
  return m.costMicros ?? picosToMicros(m.costPicos ?? 0n);
}

/** One request's reserve → settle → log (see the invariant above). */
export class RequestLifecycle {
  private settledFlag = false;
  private billing = false;
  private logged = false;
  /** What the request owes once its plugin replied (micro-USD): a failure after that still charges it. */
  private owed: Micros = 0;
  private recorded = false;
  /** How to bill a reply that started, should its plugin throw before returning (see Meter). */
  private sofar: (() => Metered) | undefined;
  private limits: Admission | undefined;

  /** The plugin's channel for a reply's running bill (RespondContext.meter). */
  readonly meter: Meter = {
    sofar: (bill) => {
      this.sofar = bill;
    },
  };

  constructor(readonly ex: Exchange, private readonly svc: LifecycleServices, private readonly book?: RequestLifecycles) {}

  /** Whether the reservation has become a charge (or been released). */
  get settled(): boolean {
    return this.settledFlag;
  }

  /** Holds `amount` micro-USD of the org's balance for this request; false when the balance cannot cover it. */
  async reserve(orgId: string, amount: Micros): Promise<boolean> {
    if (amount > 0 && !(await this.svc.store.reserve(orgId, this.ex.id, amount))) return false;
    this.ex.reservedMicros = amount;
    if (amount > 0) this.svc.telemetry?.onCreditReserved(this.ex);
    return true;
  }

  /** The limits the request was admitted against (src/pipeline/admission.ts): settled or released with the credit. */
  admitted(limits: Admission | undefined): void {
    this.limits = limits;
  }

  /** Records what the plugin measured: the cost (rounded to micro-USD here, once), usage, log fields, a cut reply's code. */
  record(m: Metered): void {
    const ex = this.ex;
    ex.costMicros = meteredMicros(m);
    ex.costEstimated = m.estimated ?? false;
    if (m.usage) ex.usage = m.usage;
    if (m.extra) ex.extra = { ...ex.extra, ...m.extra };
    if (m.errorCode) ex.errorCode = m.errorCode;
    this.owed = ex.costMicros;
    this.recorded = true;
  }

  /**
   * Settles the credit at what was recorded (0 when nothing was), then the limits: to
   * the usage when `served`, else settled when something is owed and released when not.
   * Safe to call again after a failure: each part happens once.
   */
  async finish(served: boolean): Promise<void> {
    // The plugin threw after its reply started: billed for what it said the reply cost so far.
    if (!served && !this.recorded && this.sofar) this.record(billSoFar(this.sofar));
    await this.settleCredit(this.owed);
    if (served || this.owed > 0) await this.limits?.settle(this.ex);
    else await this.limits?.release();
  }

  /**
   * Charges `cost` against the reservation (BYOK requests are never debited) exactly once.
   * Marked settled only after the store has charged: a store call that throws leaves it
   * unsettled, so the next call (the pipeline's catch, with the same cost) charges it
   * then. A repeated call cannot charge twice: the store's settle claims the reservation,
   * and once it has, `settled` stops any further call.
   */
  async settleCredit(cost: Micros): Promise<void> {
    if (this.settledFlag) return;
    const ex = this.ex;
    if (ex.reservedMicros > 0) {
      const charged = await this.svc.store.settle(ex.id, ex.byok ? 0 : cost);
      this.svc.telemetry?.onCreditSettled(ex);
      if (!ex.byok && charged < cost) {
        // The reservation bound was exceeded: the balance never goes below zero, and the
        // log row records what was charged so the ledger always equals the logged costs.
        ex.extra = { ...ex.extra, uncharged_micros: cost - charged };
        ex.costMicros = charged;
      }
    }
    this.settledFlag = true;
  }

  /**
   * Runs a model request's handler with its row held until the bill is settled. fastify's
   * onResponse runs only when a response finishes; a client that hangs up while the reply
   * is written (a stream, or a JSON body still in the socket) never gets there. So the row
   * is also queued when the response closes — but never before the bill is settled.
   */
  async charged(reply: FastifyReply, run: () => Promise<void>): Promise<void> {
    this.billing = true;
    this.book?.unlogged.add(this);
    const logClosed = (): void => {
      void this.log(reply.raw.headersSent ? reply.statusCode : 499)?.catch((err: unknown) => reply.log.error({ err }, 'post-billing hook failed'));
    };
    // A reply that finished is logged by onResponse (fastify runs it on 'finish', before 'close').
    reply.raw.once('close', logClosed);
    try {
      await run();
    } catch (err) {
      if (clientGone(reply)) this.ex.errorCode = err instanceof GatewayError ? err.code : 'internal_error';
      throw err;
    } finally {
      this.billing = false;
      // A response that ended before the handler did (a small reply flushed at once, whose
      // onResponse came before the bill was settled), or a client that hung up meanwhile
      // (mid-stream, or before the upstream answered).
      if (reply.raw.writableFinished || clientGone(reply)) logClosed();
    }
  }

  /**
   * Queues the request-log row, once, unless the bill is still pending (then the row is
   * queued when it is settled), and tells the telemetry the same facts. Resolves when the
   * `post-billing` hooks have run; undefined when nothing was queued now.
   */
  log(status: number): Promise<unknown> | undefined {
    if (this.logged || this.billing) return undefined;
    this.logged = true;
    this.book?.unlogged.delete(this);
    const row = logRowOf(this.ex, status);
    this.svc.log.enqueue(row);
    this.svc.telemetry?.onRequestEnd(this.ex, row);
    return this.svc.hooks?.run('post-billing', this.ex) ?? Promise.resolve();
  }

  /** A request that is not an API request (the console's own files): it gets no row. */
  exemptFromLog(): void {
    this.logged = true;
  }
}

/** The running bill; nothing when even that fails (the settle must still happen). */
function billSoFar(sofar: () => Metered): Metered {
  try {
    return sofar();
  } catch {
    return { costPicos: 0n };
  }
}

function clientGone(reply: FastifyReply): boolean {
  return reply.raw.destroyed && !reply.raw.writableFinished;
}

/** Every request's lifecycle while it runs: what the drain cuts and what the shutdown waits for. */
export class RequestLifecycles {
  /** Requests whose connection is still open (the drain cuts them at its deadline). */
  private readonly open = new Set<RequestLifecycle>();
  /** Model requests whose row is not queued yet: a handler may outlive its connection. */
  readonly unlogged = new Set<RequestLifecycle>();

  constructor(private readonly svc: LifecycleServices) {}

  /** The lifecycle of a request that just arrived; a response that closes unfinished aborts its exchange. */
  start(ex: Exchange, reply: FastifyReply): RequestLifecycle {
    const life = new RequestLifecycle(ex, this.svc, this);
    this.open.add(life);
    reply.raw.on('close', () => {
      this.open.delete(life);
      if (!reply.raw.writableFinished) ex.abort.abort();
    });
    return life;
  }

  /** The drain deadline: every request still running is cut (`drain_timeout`). */
  cutAll(): void {
    for (const life of this.open) cutByServer(life.ex);
  }

  /** Waits until every model request has queued its row, or the clock (ms since epoch) passes `deadline`. */
  async waitForRows(deadline: number): Promise<void> {
    while (this.unlogged.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }
}
