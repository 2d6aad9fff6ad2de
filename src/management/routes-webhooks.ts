import { newWebhookSecret } from '../alerts/signature.js';
import { webhookUrlProblem } from '../alerts/ssrf.js';
import { GatewayError, invalidField } from '../errors.js';
import { SecretKeyMissingError } from '../secrets.js';
import { WEBHOOK_EVENTS, type Webhook, type WebhookDelivery, type WebhookEvent } from '../store/webhook-store.js';
import { callerOf, scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import type { ManagementRoute } from './http.js';
import { bool, input, int, list, maybe, obj, PAGE_LIMIT, params, str, time } from './schemas.js';
import { iso } from './views.js';

const EVENTS = { type: 'array', items: str('', { enum: [...WEBHOOK_EVENTS] }), minItems: 1, uniqueItems: true, description: 'Event types it receives' };
const WEBHOOK = obj({
  id: str('wh_…'), url: str(), events: EVENTS, slack: bool('Sent as a Slack-compatible `{text}` body'), created_at: time(), created_by: maybe(str('User id; null for the CLI')),
});
const CREATED_WEBHOOK = obj({ ...(WEBHOOK.properties as Record<string, Record<string, unknown>>), secret: str('The signing secret: shown this once, stored encrypted') });
const DELIVERY = obj({
  id: str('dlv_…'), event_id: str('The event id receivers deduplicate by'), type: str(), status: str('', { enum: ['pending', 'delivered', 'failed'] }),
  attempts: int(), next_attempt_at: maybe(time('When it is tried next; null once delivered or given up')), last_status: maybe(int('HTTP status of the last attempt')),
  last_error: maybe(str()), created_at: time(), delivered_at: maybe(time()), payload: { type: 'object', additionalProperties: true, description: 'The event as sent (unsigned)' },
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
  const webhookOf = async (orgId: string, id: string): Promise<Webhook> => {
    const w = await store.webhooks.get(orgId, id);
    if (!w) throw new GatewayError('not_found', [`No webhook ${id}`]);
    return w;
  };
  return [
    {
      method: 'GET', url: '/api/v1/orgs/:org/webhooks', tag: 'webhooks', summary: "The org's alert webhooks (never their secrets).",
      schema: { params: params('org'), response: { 200: list(WEBHOOK) } },
      async handler(request) {
        return { data: (await store.webhooks.list(scopeOf(request).org.id)).map(webhookView) };
      },
    },
    {
      method: 'POST', url: '/api/v1/orgs/:org/webhooks', tag: 'webhooks',
      summary: 'Adds a webhook; the answer holds its signing secret, shown this once. URLs to private, loopback and link-local addresses are refused unless webhooks.allow_private_urls.',
      schema: {
        params: params('org'),
        body: input({ url: str('http(s) URL the events are POSTed to', { minLength: 8, maxLength: 2000 }), events: { ...EVENTS, default: [...WEBHOOK_EVENTS] }, slack: bool('Send a Slack-compatible `{text}` body') }, ['url']),
        response: { 201: CREATED_WEBHOOK },
      },
      async handler(request, reply) {
        const b = request.body as { url: string; events: WebhookEvent[]; slack?: boolean };
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
    },
    {
      method: 'DELETE', url: '/api/v1/orgs/:org/webhooks/:webhook', tag: 'webhooks', summary: 'Removes a webhook; its undelivered events are dropped.',
      schema: { params: params('org', 'webhook'), response: { 200: obj({ id: str(), deleted: bool() }) } },
      async handler(request) {
        const { webhook } = request.params as { webhook: string };
        if (!(await store.webhooks.delete(scopeOf(request).org.id, webhook))) throw new GatewayError('not_found', [`No webhook ${webhook}`]);
        return { id: webhook, deleted: true };
      },
    },
    {
      method: 'POST', url: '/api/v1/orgs/:org/webhooks/:webhook/test', tag: 'webhooks', summary: 'Queues a test event (type `test`) for this webhook, delivered, signed and retried like any other.',
      schema: { params: params('org', 'webhook'), response: { 202: obj({ event_id: str() }) } },
      async handler(request, reply) {
        const { org } = scopeOf(request);
        const w = await webhookOf(org.id, (request.params as { webhook: string }).webhook);
        const eventId = await store.webhooks.enqueueTest(org.id, w.id, { org: org.name, time: iso(d.now()) });
        void reply.code(202);
        return { event_id: eventId };
      },
    },
    {
      method: 'GET', url: '/api/v1/orgs/:org/webhooks/:webhook/deliveries', tag: 'webhooks', summary: "A webhook's deliveries, newest first: status, attempts, the last answer.",
      schema: { params: params('org', 'webhook'), querystring: input({ limit: PAGE_LIMIT(200, 50) }), response: { 200: list(DELIVERY) } },
      async handler(request) {
        const { org } = scopeOf(request);
        const w = await webhookOf(org.id, (request.params as { webhook: string }).webhook);
        return { data: (await store.webhooks.deliveries(org.id, w.id, (request.query as { limit: number }).limit)).map(deliveryView) };
      },
    },
  ];
}
