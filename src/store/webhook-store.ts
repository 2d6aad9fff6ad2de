import { newId } from '../lib/ids.js';
import { type SecretBox, SecretKeyMissingError } from '../lib/secrets.js';
import type { SqlDb } from './sql.js';

/** The event types a webhook can subscribe to (docs/management.md, "Webhooks"). */
export const WEBHOOK_EVENTS = ['budget.threshold', 'balance.below'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface Webhook {
  id: string;
  orgId: string;
  url: string;
  events: WebhookEvent[];
  slack: boolean;
  createdAt: number;
  createdBy: string | null;
}

export interface WebhookDelivery {
  id: string;
  eventId: string;
  webhookId: string;
  orgId: string;
  type: string;
  /** The event's JSON (without the signature), as it is sent. */
  payload: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** A threshold crossing, recorded once per (org, scope, threshold, period start). */
export interface AlertCrossing {
  orgId: string;
  /** `key:<id>`, `project:<id>` or `balance`. */
  scope: string;
  threshold: number;
  periodStart: number;
  type: WebhookEvent;
  /** The event body without its id (added here). */
  body: Record<string, unknown>;
}

interface WebhookRow { id: string; org_id: string; url: string; events: string; slack: number; secret: string; created_at: number | string; created_by: string | null }
interface DeliveryRow {
  id: string; event_id: string; webhook_id: string; org_id: string; type: string; payload: string; status: WebhookDelivery['status'];
  attempts: number; next_attempt_at: number | string; claimed_until: number | string | null; last_status: number | null; last_error: string | null;
  created_at: number | string; delivered_at: number | string | null;
}
/** An org's balance alert (docs/limits.md, "Alerts"). */
export interface BalanceAlert {
  orgId: string;
  orgName: string;
  /** `balance.below` fires when the balance is below this (micro-USD). */
  belowMicros: number;
  /** The start of its current period: it fires at most once per period. */
  since: number;
  /** The org's balance not charged yet: stored, in balance slices and held by reservations. */
  balanceMicros: number;
  /** The event of this period, when it has fired. */
  firedEventId: string | null;
}

/*
 * Money of the org not charged yet, wherever it sits: its row, the balance slices of
 * instances (PostgreSQL) and reservations of requests in flight. It only goes down with
 * charges and up with credits, so a request in flight never makes it dip and come back.
 */
const UNCHARGED = `o.balance_micros + COALESCE((SELECT CAST(SUM(s.amount_micros) AS BIGINT) FROM balance_slices s WHERE s.org_id = o.id), 0)
  + COALESCE((SELECT CAST(SUM(r.amount_micros) AS BIGINT) FROM reservations r WHERE r.org_id = o.id), 0)`;
const BALANCE_ALERTS = `SELECT o.id, o.name, o.balance_alert_micros AS below, o.balance_alert_since AS since, ${UNCHARGED} AS balance,
  (SELECT e.id FROM alert_events e WHERE e.org_id = o.id AND e.scope = 'balance' AND e.threshold = 0 AND e.period_start = o.balance_alert_since) AS fired
  FROM orgs o WHERE o.balance_alert_micros IS NOT NULL`;
interface BalanceAlertRow { id: string; name: string; below: number | string; since: number | string; balance: number | string; fired: string | null }

interface EventRow { id: string; org_id: string; type: string; payload: string; created_at: number | string }

const context = (orgId: string, id: string): string => `webhooks:${orgId}:${id}`;
const num = (v: number | string): number => Number(v);

/**
 * Webhooks of an org (the secret sealed at rest), the alert events (one per crossing,
 * decided by a unique row) and the delivery outbox (docs/management.md, "Webhooks").
 */
export class SqlWebhookStore {
  constructor(private readonly db: SqlDb, private readonly box: SecretBox | undefined, private readonly now: () => number) {}

  private requireBox(what: string): SecretBox {
    if (!this.box) throw new SecretKeyMissingError(what);
    return this.box;
  }

  /** Stores a webhook with its secret sealed; returns it (the secret itself only in the caller's hands). */
  async create(orgId: string, w: { url: string; events: WebhookEvent[]; slack: boolean; secret: string }, actor: string | null): Promise<Webhook> {
    const id = newId('wh');
    const sealed = this.requireBox('cannot store a webhook secret').seal(w.secret, context(orgId, id));
    const at = this.now();
    await this.db.run('INSERT INTO webhooks (id, org_id, url, events, slack, secret, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [id, orgId, w.url, JSON.stringify(w.events), w.slack ? 1 : 0, sealed, at, actor]);
    return { id, orgId, url: w.url, events: w.events, slack: w.slack, createdAt: at, createdBy: actor };
  }

  async list(orgId: string): Promise<Webhook[]> {
    return (await this.db.all<WebhookRow>('SELECT * FROM webhooks WHERE org_id = ? ORDER BY created_at, id', [orgId])).map(toWebhook);
  }

  async get(orgId: string, id: string): Promise<Webhook | undefined> {
    const [row] = await this.db.all<WebhookRow>('SELECT * FROM webhooks WHERE org_id = ? AND id = ?', [orgId, id]);
    return row && toWebhook(row);
  }

  /** Removes the webhook and its undelivered events; false when the org has no such webhook. */
  async delete(orgId: string, id: string): Promise<boolean> {
    const gone = (await this.db.run('DELETE FROM webhooks WHERE org_id = ? AND id = ?', [orgId, id])) > 0;
    if (gone) await this.db.run("DELETE FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending'", [id]);
    return gone;
  }

  /** The webhook's secret in clear, for signing (the delivery task only). */
  private secretOf(row: WebhookRow): string {
    return this.requireBox('cannot read the stored webhook secrets').open(row.secret, context(row.org_id, row.id));
  }

  /**
   * Records a crossing; true only for the one caller (of any instance) whose row went in.
   * The unique (org, scope, threshold, period start) decides it.
   */
  async recordCrossing(c: AlertCrossing): Promise<boolean> {
    const id = newId('evt');
    const at = this.now();
    const payload = JSON.stringify({ id, ...c.body });
    return (await this.db.run(`INSERT INTO alert_events (id, org_id, scope, threshold, period_start, type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (org_id, scope, threshold, period_start) DO NOTHING`, [id, c.orgId, c.scope, c.threshold, c.periodStart, c.type, payload, at])) > 0;
  }

  /**
   * Writes the outbox rows of events not fanned out yet: one per (event, webhook of its org
   * subscribed to its type, created before it). Idempotent (unique (event, webhook)), so
   * two instances doing it at once, or a crash between the two steps, write each row once.
   */
  async fanOut(limit = 100): Promise<number> {
    const events = await this.db.all<EventRow>('SELECT id, org_id, type, payload, created_at FROM alert_events WHERE fanned_out = 0 ORDER BY created_at LIMIT ?', [limit]);
    let written = 0;
    for (const e of events) {
      const hooks = (await this.db.all<WebhookRow>('SELECT * FROM webhooks WHERE org_id = ? AND created_at <= ?', [e.org_id, num(e.created_at)]))
        .map(toWebhook).filter((w) => w.events.includes(e.type as WebhookEvent));
      const at = this.now();
      if (hooks.length > 0) {
        await this.db.runMany(`INSERT INTO webhook_deliveries (id, event_id, webhook_id, org_id, type, payload, status, attempts, next_attempt_at, created_at)
          VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (event_id, webhook_id) DO NOTHING`,
        hooks.map((w) => [newId('dlv'), e.id, w.id, e.org_id, e.type, e.payload, at, at]));
      }
      await this.db.run('UPDATE alert_events SET fanned_out = 1 WHERE id = ?', [e.id]);
      written += hooks.length;
    }
    return written;
  }

  /** Queues a test event for one webhook (the "send test event" action); returns its event id. */
  async enqueueTest(orgId: string, webhookId: string, body: Record<string, unknown>): Promise<string> {
    const eventId = newId('evt');
    const at = this.now();
    await this.db.run(`INSERT INTO webhook_deliveries (id, event_id, webhook_id, org_id, type, payload, status, attempts, next_attempt_at, created_at)
      VALUES (?, ?, ?, ?, 'test', ?, 'pending', 0, ?, ?)`, [newId('dlv'), eventId, webhookId, orgId, JSON.stringify({ id: eventId, type: 'test', ...body }), at, at]);
    return eventId;
  }

  /**
   * Claims up to `limit` due deliveries until `leaseMs` from now: one UPDATE … RETURNING
   * that re-checks the lease on each row, so two instances never claim the same row at once.
   * Each comes with its webhook (url, slack, secret in clear); a row whose webhook is gone
   * comes with none.
   */
  async claimDue(limit: number, leaseMs: number): Promise<Array<{ delivery: WebhookDelivery; claimedUntil: number; hook: (Webhook & { secret: string }) | undefined }>> {
    const now = this.now();
    const until = now + leaseMs;
    const free = "status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)";
    const rows = await this.db.all<DeliveryRow>(`UPDATE webhook_deliveries SET claimed_until = ?, attempts = attempts + 1
      WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${free} ORDER BY next_attempt_at LIMIT ?) AND ${free} RETURNING *`,
    [until, now, now, limit, now, now]);
    const out = [];
    for (const r of rows) {
      const [w] = await this.db.all<WebhookRow>('SELECT * FROM webhooks WHERE id = ?', [r.webhook_id]);
      out.push({ delivery: toDelivery(r), claimedUntil: until, hook: w && { ...toWebhook(w), secret: this.secretOf(w) } });
    }
    return out;
  }

  /** A 2xx: delivered, never sent again. Only under the caller's own lease. */
  async markDelivered(id: string, claimedUntil: number, status: number): Promise<void> {
    await this.db.run("UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, last_status = ?, last_error = NULL, claimed_until = NULL WHERE id = ? AND claimed_until = ?",
      [this.now(), status, id, claimedUntil]);
  }

  /** A failed attempt: retried at `retryAt`, or given up (`failed`) when that is undefined. */
  async markFailed(id: string, claimedUntil: number, status: number | null, error: string, retryAt: number | undefined): Promise<void> {
    await this.db.run(`UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, last_status = ?, last_error = ?, claimed_until = NULL WHERE id = ? AND claimed_until = ?`,
      [retryAt === undefined ? 'failed' : 'pending', retryAt ?? this.now(), status, error.slice(0, 500), id, claimedUntil]);
  }

  /** Sets (a new period from now) or removes (null) the org's balance alert. */
  async setBalanceAlert(orgId: string, belowMicros: number | null): Promise<void> {
    await this.db.run('UPDATE orgs SET balance_alert_micros = ?, balance_alert_since = ? WHERE id = ?', [belowMicros, belowMicros === null ? null : this.now(), orgId]);
  }

  /** The org's balance alert, or undefined when it has none. */
  async balanceAlert(orgId: string): Promise<BalanceAlert | undefined> {
    const [row] = await this.db.all<BalanceAlertRow>(`${BALANCE_ALERTS} AND o.id = ?`, [orgId]);
    return row && toBalanceAlert(row);
  }

  /** Every org's balance alert with its balance (one query, for the periodic check). */
  async balanceAlerts(limit = 1000): Promise<BalanceAlert[]> {
    return (await this.db.all<BalanceAlertRow>(`${BALANCE_ALERTS} ORDER BY o.id LIMIT ?`, [limit])).map(toBalanceAlert);
  }

  /** Starts a new period of a fired balance alert; only the caller that still saw `since` does it (false for the others). */
  async rearmBalanceAlert(orgId: string, since: number): Promise<boolean> {
    return (await this.db.run('UPDATE orgs SET balance_alert_since = ? WHERE id = ? AND balance_alert_since = ?', [Math.max(this.now(), since + 1), orgId, since])) > 0;
  }

  /** A webhook's deliveries, newest first. */
  async deliveries(orgId: string, webhookId: string, limit: number): Promise<WebhookDelivery[]> {
    return (await this.db.all<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE org_id = ? AND webhook_id = ? ORDER BY created_at DESC, id DESC LIMIT ?',
      [orgId, webhookId, limit])).map(toDelivery);
  }
}

function toWebhook(r: WebhookRow): Webhook {
  return { id: r.id, orgId: r.org_id, url: r.url, events: JSON.parse(r.events) as WebhookEvent[], slack: Number(r.slack) === 1, createdAt: num(r.created_at), createdBy: r.created_by };
}

function toBalanceAlert(r: BalanceAlertRow): BalanceAlert {
  return { orgId: r.id, orgName: r.name, belowMicros: num(r.below), since: num(r.since), balanceMicros: num(r.balance), firedEventId: r.fired };
}

function toDelivery(r: DeliveryRow): WebhookDelivery {
  return {
    id: r.id, eventId: r.event_id, webhookId: r.webhook_id, orgId: r.org_id, type: r.type, payload: r.payload, status: r.status,
    attempts: Number(r.attempts), nextAttemptAt: num(r.next_attempt_at), lastStatus: r.last_status === null ? null : Number(r.last_status),
    lastError: r.last_error, createdAt: num(r.created_at), deliveredAt: r.delivered_at === null ? null : num(r.delivered_at),
  };
}
