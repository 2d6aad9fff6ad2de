import type { SqlWebhookStore, WebhookDelivery } from '../store/webhook-store.js';
import { signatureHeader } from './signature.js';
import { webhookUrlProblem } from '../lib/ssrf.js';

export interface DeliverySettings {
  allowPrivateUrls: boolean;
  retryInitialMs: number;
  retryMaxHours: number;
  /** Bound on each POST (default 10 s); past it the attempt counts as failed. */
  timeoutMs?: number;
}

/** What a run that found nothing to do reports (logged at debug only: it runs every second). */
export const DELIVERY_IDLE = 'nothing to deliver';

/** Rows claimed per run, and how long a claim holds (well above the POST's timeout). */
const BATCH = 20;
const LEASE_MS = 60_000;

/** A Slack-compatible body (`{text}`) for a webhook that asks for one. */
function slackText(payload: Record<string, unknown>): string {
  if (payload.type === 'test') return `Tollgate test event for org ${String(payload.org)}`;
  if (payload.type === 'budget.threshold') {
    const who = payload.scope === 'key' ? `key ${String(payload.key)}` : `project ${String(payload.project)}`;
    return `Tollgate: ${who} of org ${String(payload.org)} has spent $${String(payload.spent)} of its $${String(payload.budget)} budget (${String(payload.threshold)} % reached)`;
  }
  if (payload.type === 'balance.below') {
    return `Tollgate: the balance of org ${String(payload.org)} is $${String(payload.balance)}, below its alert amount of $${String(payload.threshold)}`;
  }
  return `Tollgate: ${String(payload.type)} for org ${String(payload.org)}`;
}

/**
 * The outbox's delivery task (docs/management.md, "Webhooks"): writes the outbox rows of
 * new events, claims due rows with a lease (one UPDATE … RETURNING, so two instances never
 * send one row at once), POSTs each signed, marks it delivered after a 2xx (never sent
 * again) or schedules its retry: `retryInitialMs`, doubling, until `retryMaxHours` after
 * the event, then `failed`. Everything is in the database, so a crash loses nothing: a
 * claimed row whose instance died is due again when its lease ends.
 */
export class WebhookDeliverer {
  constructor(private readonly store: SqlWebhookStore, private readonly settings: DeliverySettings, private readonly now: () => number) {}

  async run(): Promise<string> {
    const fanned = await this.store.fanOut();
    const claimed = await this.store.claimDue(BATCH, LEASE_MS);
    const results = await Promise.all(claimed.map((c) => this.deliver(c.delivery, c.claimedUntil, c.hook)));
    const ok = results.filter(Boolean).length;
    if (fanned === 0 && claimed.length === 0) return DELIVERY_IDLE;
    return `${fanned} queued, ${ok} delivered, ${claimed.length - ok} to retry or given up`;
  }

  private async deliver(d: WebhookDelivery, claimedUntil: number, hook: { url: string; slack: boolean; secret: string } | undefined): Promise<boolean> {
    if (!hook) {
      await this.store.markFailed(d.id, claimedUntil, null, 'the webhook was deleted', undefined);
      return false;
    }
    let status: number | null = null;
    let error: string;
    try {
      const problem = await webhookUrlProblem(hook.url, this.settings.allowPrivateUrls);
      if (problem) throw new Error(`url ${problem}`);
      const body = hook.slack ? JSON.stringify({ text: slackText(JSON.parse(d.payload) as Record<string, unknown>) }) : d.payload;
      const t = Math.floor(this.now() / 1000);
      const res = await fetch(hook.url, {
        method: 'POST', body, redirect: 'manual', signal: AbortSignal.timeout(this.settings.timeoutMs ?? 10_000),
        headers: { 'content-type': 'application/json', 'user-agent': 'tollgate-webhooks', 'x-tollgate-signature': signatureHeader(hook.secret, body, t), 'x-tollgate-event-id': d.eventId },
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) {
        await this.store.markDelivered(d.id, claimedUntil, res.status);
        return true;
      }
      error = `HTTP ${res.status}`;
    } catch (err) {
      error = (err as Error).name === 'TimeoutError' ? 'timed out' : (err as Error).message;
    }
    // `attempts` counts this one: after the 1st failure retryInitialMs, then twice as long each time.
    const retryAt = this.now() + this.settings.retryInitialMs * 2 ** Math.max(0, d.attempts - 1);
    const giveUpAt = d.createdAt + this.settings.retryMaxHours * 3_600_000;
    await this.store.markFailed(d.id, claimedUntil, status, error, retryAt <= giveUpAt ? retryAt : undefined);
    return false;
  }
}
