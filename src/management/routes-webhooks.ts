import { newWebhookSecret } from '../alerts/signature.js';
import { webhookUrlProblem } from '../lib/ssrf.js';
import { GatewayError, invalidField } from '../lib/errors.js';
import { SecretKeyMissingError } from '../lib/secrets.js';
import { microsToUsd } from '../lib/money.js';
import { type BalanceAlert, WEBHOOK_EVENTS, type Webhook, type WebhookDelivery } from '../store/webhook-store.js';
import { callerOf, scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import { found, orgListRoute, route, type ManagementRoute } from './http.js';
import { bool, input, int, list, maybe, obj, PAGE_LIMIT, params, str, time, usd, USD_INPUT } from './schemas.js';
import { usdInput } from './usd.js';
import { iso } from './views.js';

const EVENTS = { type: 'array', items: str('', { enum: [...WEBHOOK_EVENTS] }), minItems: 1, uniqueItems: true, description: 'Event types it receives' };
const WEBHOOK = obj({
  id: str('wh_…'), url: str(), events: EVENTS, slack: bool('Sent as a Slack-compatible `{text}` body'), created_at: time(), created_by: maybe(str('User id; null for the CLI')),
}, { title: 'Webhook' });
const CREATED_WEBHOOK = obj({ ...(WEBHOOK.properties as Record<string, Record<string, unknown>>), secret: str('The signing secret: shown this once, stored encrypted') }, { title: 'CreatedWebhook' });
const DELIVERY = obj({
  id: str('dlv_…'), event_id: str('The event id receivers deduplicate by'), type: str(), status: str('', { enum: ['pending', 'delivered', 'failed'] }),
  attempts: int(), next_attempt_at: maybe(time('When it is tried next; null once delivered or given up')), last_status: maybe(int('HTTP status of the last attempt')),
  last_error: maybe(str()), created_at: time(), delivered_at: maybe(time()), payload: { type: 'object', additionalProperties: true, description: 'The event as sent (unsigned)' },
}, { title: 'WebhookDelivery' });

const BALANCE_ALERT = obj({
  below_usd: maybe(usd('`balance.below` fires when the balance is below this; null: no balance alert')),
  period_start: maybe(time('Start of the current period: it fires at most once per period')),
  fired: bool('It fired in the current period (it fires again after the balance is back at or above the amount)'),
});
const balanceAlertView = (a: BalanceAlert | undefined) => ({
  below_usd: a ? microsToUsd(a.belowMicros) : null, period_start: a ? iso(a.since) : null, fired: a ? a.firedEventId !== null : false,
});

const webhookView = (w: Webhook) => ({ id: w.id, url: w.url, events: w.events, slack: w.slack, created_at: iso(w.createdAt), created_by: w.createdBy });
const deliveryView = (d: WebhookDelivery) => ({
  id: d.id, event_id: d.eventId, type: d.type, status: d.status, attempts: d.attempts, next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
  last_status: d.lastStatus, last_error: d.lastError, created_at: iso(d.createdAt), delivered_at: d.deliveredAt === null ? null : iso(d.deliveredAt),
  payload: JSON.parse(d.payload) as Record<string, unknown>,
});

/** An org's alert webhooks (docs/management.md, "Webhooks"): list, create (secret shown once), delete, test, delivery history. */
export function webhookRoutes(d: ManagementDeps): ManagementRoute[] {
  const { store } = d;
  const webhookOf = async (orgId: string, id: string): Promise<Webhook> => found(await store.webhooks.get(orgId, id), `webhook ${id}`);
  return [
    orgListRoute({
      url: '/api/v1/orgs/:org/webhooks', access: 'admin', tag: 'webhooks', summary: "The org's alert webhooks (never their secrets).", item: WEBHOOK,
      list: async (orgId) => (await store.webhooks.list(orgId)).map(webhookView),
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/webhooks', access: 'admin', tag: 'webhooks',
      summary: 'Adds a webhook; the answer holds its signing secret, shown this once. URLs to private, loopback and link-local addresses are refused unless webhooks.allow_private_urls.',
      schema: {
        params: params('org'),
        body: input({ url: str('http(s) URL the events are POSTed to', { minLength: 8, maxLength: 2000 }), events: { ...EVENTS, default: [...WEBHOOK_EVENTS] }, slack: bool('Send a Slack-compatible `{text}` body') }, ['url']),
        response: { 201: CREATED_WEBHOOK },
      },
      async handler(request, reply) {
        const b = request.body;
        const problem = await webhookUrlProblem(b.url, d.allowPrivateWebhookUrls);
        if (problem) throw invalidField('url', `"url" ${problem}`);
        const secret = newWebhookSecret();
        try {
          const w = await store.webhooks.create(scopeOf(request).org.id, { url: b.url, events: b.events, slack: b.slack ?? false, secret }, callerOf(request).user.id);
          void reply.code(201);
          return { ...webhookView(w), secret };
        } catch (err) {
          if (err instanceof SecretKeyMissingError) throw new GatewayError('encryption_unavailable', [err.message]);
          throw err;
        }
      },
    }),
    route({
      method: 'DELETE', url: '/api/v1/orgs/:org/webhooks/:webhook', access: 'admin', tag: 'webhooks', summary: 'Removes a webhook; its undelivered events are dropped.',
      schema: { params: params('org', 'webhook'), response: { 200: obj({ id: str(), deleted: bool() }) } },
      async handler(request) {
        const { webhook } = request.params;
        found(await store.webhooks.delete(scopeOf(request).org.id, webhook), `webhook ${webhook}`);
        return { id: webhook, deleted: true };
      },
    }),
    route({
      method: 'POST', url: '/api/v1/orgs/:org/webhooks/:webhook/test', access: 'admin', tag: 'webhooks', summary: 'Queues a test event (type `test`) for this webhook, delivered, signed and retried like any other.',
      schema: { params: params('org', 'webhook'), response: { 202: obj({ event_id: str() }) } },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const w = await webhookOf(org.id, request.params.webhook);
        const eventId = await store.webhooks.enqueueTest(org.id, w.id, { org: org.name, time: iso(d.now()) });
        void reply.code(202);
        return { event_id: eventId };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/webhooks/:webhook/deliveries', access: 'admin', tag: 'webhooks', summary: "A webhook's deliveries, newest first: status, attempts, the last answer.",
      schema: { params: params('org', 'webhook'), querystring: input({ limit: PAGE_LIMIT(200, 50) }), response: { 200: list(DELIVERY) } },
      async handler(request) {
        const { org } = scopeOf(request);
        const w = await webhookOf(org.id, request.params.webhook);
        return { data: (await store.webhooks.deliveries(org.id, w.id, request.query.limit)).map(deliveryView) };
      },
    }),
    route({
      method: 'GET', url: '/api/v1/orgs/:org/balance-alert', access: 'admin', tag: 'webhooks', summary: "The org's balance alert: the amount `balance.below` fires under, and whether it fired in this period.",
      schema: { params: params('org'), response: { 200: BALANCE_ALERT } },
      async handler(request) {
        return balanceAlertView(await store.webhooks.balanceAlert(scopeOf(request).org.id));
      },
    }),
    route({
      method: 'PUT', url: '/api/v1/orgs/:org/balance-alert', access: 'owner', tag: 'webhooks',
      summary: 'Sets the balance alert (`below_usd`; null removes it). Setting it starts a new period: it fires once when the balance is below the amount.',
      schema: { params: params('org'), body: input({ below_usd: { anyOf: [USD_INPUT, { type: 'null' }], description: 'USD amount; null: no balance alert' } }, ['below_usd']), response: { 200: BALANCE_ALERT } },
      async handler(request) {
        const { org } = scopeOf(request);
        const raw = request.body.below_usd;
        const below = raw === null ? null : usdInput(raw, 'below_usd');
        if (below !== null && below <= 0) throw invalidField('below_usd', '"below_usd" must be more than 0');
        await store.webhooks.setBalanceAlert(org.id, below);
        return balanceAlertView(await store.webhooks.balanceAlert(org.id));
      },
    }),
  ];
}
