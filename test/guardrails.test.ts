import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useOrgGateway, } from './fixtures.js';
import { logRow, postJson, runTask } from './harness.js';
import { type Api, ownerWithProject, signIn } from './management-helpers.js';

/**
 * Issue 34: guardrails per project (docs/guardrails.md) and bodies in the log. Every test
 * ends with the org's ledger equal to the sum of its logged costs (the fixture's `ledger`).
 */

type Body = Record<string, unknown>;
const EMAIL = 'jane.doe@example.com';
const GOOD_CARD = '4111 1111 1111 1111';
const BAD_CARD = '4111 1111 1111 1112'; // fails Luhn
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const requestIdOf = (r: { headers: Headers }): string => r.headers.get('x-request-id') ?? '';
const chat = (text: string, extra: Body = {}): Body => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }], ...extra });

/** A moderation service on 127.0.0.1 whose answer (and delay) each test sets. */
class FakeModerator {
  server: Server | undefined;
  url = '';
  delayMs = 0;
  answer: Body = { action: 'allow' };
  calls: Body[] = [];

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        this.calls.push(JSON.parse(raw) as Body);
        const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.answer)), this.delayMs);
        res.on('close', () => clearTimeout(timer));
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    const addr = this.server.address();
    this.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/check`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

describe('project guardrails', () => {
  const clock = { offset: 0 };
  const t = useOrgGateway('guard', '20', { now: () => Date.now() + clock.offset, yaml: { metrics: { port: 0 }, webhooks: { allow_private_urls: true } } }, { ledger: true });
  const moderator = new FakeModerator();
  let owner: Api;
  let projectPath: string;
  let key: string;
  const patch = async (body: Body): Promise<void> => {
    const r = await owner.patch(projectPath, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  const send = (body: Body, path = '/v1/chat/completions', headers: Record<string, string> = {}) => postJson(`${t.url}${path}`, body, key, headers);
  const lastUpstream = (): string => t.sim.received().at(-1)?.body ?? '';

  beforeAll(async () => {
    await moderator.start();
    let project: Body;
    ({ owner, project, path: projectPath, key } = await ownerWithProject(t, 'guard', 'owner@guard.test', 'secure', 'app'));
    expect(project.guardrails).toEqual([]);
    expect(project.body_logging).toEqual({ mode: 'off', retention_days: 30, max_bytes: 65536 });
  });
  afterAll(async () => moderator.close());
  beforeEach(() => {
    moderator.delayMs = 0;
    moderator.answer = { action: 'allow' };
    moderator.calls = [];
  });

  it('masks an email before the upstream sees it, restores it for the client, and keeps it out of the log', async () => {
    await patch({ guardrails: [{ type: 'pii', action: 'mask', restore: true }] });
    const r = await send(chat(`Write to ${EMAIL} about the invoice [[sim:echo_placeholders]]`));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const upstream = lastUpstream();
    expect(upstream).toContain('[EMAIL_1]');
    expect(upstream).not.toContain(EMAIL);
    const reply = (r.body as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content ?? '';
    expect(reply.startsWith(EMAIL)).toBe(true); // the model said [EMAIL_1]; the client reads the address
    const row = await logRow(t, requestIdOf(r));
    expect(row.costMicros).toBeGreaterThan(0);
    expect(row.prompt).toContain('[EMAIL_1]');
    expect(row.prompt).not.toContain(EMAIL);
    expect(row.guardrails).toEqual([{ guardrail: 'pii', stage: 'pre-upstream', action: 'mask', categories: ['email'], count: 1 }]);
  });

  it('restores in a stream too, and without restore the client gets the placeholder', async () => {
    const s = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat(`mail ${EMAIL} [[sim:echo_placeholders]]`, { stream: true })),
    });
    const text = await s.text();
    expect(text).toContain(EMAIL);
    expect(text).not.toContain('[EMAIL_1]');
    expect(lastUpstream()).not.toContain(EMAIL);
    await patch({ guardrails: [{ type: 'pii', action: 'mask' }] });
    const r = await send(chat(`mail ${EMAIL} [[sim:echo_placeholders]]`));
    expect(JSON.stringify(r.body)).toContain('[EMAIL_1]');
    expect(JSON.stringify(r.body)).not.toContain(EMAIL);
  });

  it('masks in every client format (Anthropic, Responses, Gemini, token counting), embeddings, speech, images and moderations', async () => {
    await patch({ guardrails: [{ type: 'pii', action: 'mask' }] });
    const cases: Array<{ path: string; body: Body; headers?: Record<string, string> }> = [
      { path: '/v1/messages', body: { model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'text', text: `key ${AWS_KEY} mail ${EMAIL}` }] }] }, headers: { 'anthropic-version': '2023-06-01' } },
      { path: '/v1/messages', body: { model: 'gpt-4o-mini', max_tokens: 50, system: `admin is ${EMAIL}`, messages: [{ role: 'user', content: `key ${AWS_KEY}` }] }, headers: { 'anthropic-version': '2023-06-01' } },
      { path: '/v1/responses', body: { model: 'gpt-4o-mini', input: `key ${AWS_KEY} mail ${EMAIL}` } },
      { path: '/v1/responses', body: { model: 'claude-haiku-4-5', max_output_tokens: 50, instructions: `mail ${EMAIL}`, input: `key ${AWS_KEY}` } },
      { path: '/v1beta/models/gemini-2.5-flash:generateContent', body: { contents: [{ role: 'user', parts: [{ text: `key ${AWS_KEY} mail ${EMAIL}` }] }] } },
      { path: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: [`mail ${EMAIL}`, `key ${AWS_KEY}`] } },
      { path: '/v1/audio/speech', body: { model: 'tts-1', voice: 'alloy', input: `Call ${EMAIL} with the key ${AWS_KEY}` } },
      { path: '/v1/messages/count_tokens', body: { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: `key ${AWS_KEY} mail ${EMAIL}` }] }, headers: { 'anthropic-version': '2023-06-01' } },
      { path: '/v1/images/generations', body: { model: 'gpt-image-1', prompt: `a poster with ${EMAIL} and ${AWS_KEY}` } },
      { path: '/v1/moderations', body: { model: 'omni-moderation-latest', input: [`mail ${EMAIL}`, `key ${AWS_KEY}`] } },
    ];
    for (const c of cases) {
      const before = t.sim.received().length;
      const r = await send(c.body, c.path, c.headers);
      expect(r.status, `${c.path} ${JSON.stringify(r.body).slice(0, 300)}`).toBe(200);
      expect(t.sim.received().length, c.path).toBe(before + 1);
      const up = lastUpstream();
      expect(up, c.path).not.toContain(EMAIL);
      expect(up, c.path).not.toContain(AWS_KEY);
      expect(up, c.path).toMatch(/\[(EMAIL|SECRET)_1\]/);
      const row = await logRow(t, requestIdOf(r));
      expect(row.prompt ?? '', c.path).not.toContain(EMAIL);
      expect(row.prompt ?? '', c.path).not.toContain(AWS_KEY);
    }
  });

  it('masks a Luhn-valid card number and leaves one that fails Luhn alone', async () => {
    await patch({ guardrails: [{ type: 'pii', action: 'mask', entities: ['card'] }] });
    await send(chat(`pay with ${GOOD_CARD} please`));
    expect(lastUpstream()).toContain('[CARD_1]');
    expect(lastUpstream()).not.toContain(GOOD_CARD);
    await send(chat(`order ${BAD_CARD} please`));
    expect(lastUpstream()).toContain(BAD_CARD);
  });

  it('blocks with 400 guardrail_blocked before any upstream call, charges nothing, never echoes the value', async () => {
    await patch({ guardrails: [{ type: 'pii', action: 'mask', entities: ['email'] }, { type: 'pii', name: 'no-secrets', action: 'block', entities: ['secret'] }] });
    const before = t.sim.received().length;
    const balance = await t.balance(t.orgId);
    const r = await send(chat(`deploy with ${AWS_KEY} and tell ${EMAIL}`));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: { code: 'guardrail_blocked', type: 'invalid_request_error' } });
    const message = (r.body as { error: { message: string } }).error.message;
    expect(message).toContain('no-secrets');
    expect(message).toContain('secret');
    expect(message).not.toContain(AWS_KEY);
    expect(t.sim.received().length).toBe(before);
    const row = await logRow(t, requestIdOf(r));
    expect(row.costMicros).toBe(0);
    expect(row.errorCode).toBe('guardrail_blocked');
    expect(row.prompt ?? '').not.toContain(AWS_KEY);
    expect(row.prompt ?? '').not.toContain(EMAIL);
    expect(row.guardrails).toEqual([
      { guardrail: 'pii', stage: 'pre-upstream', action: 'mask', categories: ['email'], count: 1 },
      { guardrail: 'no-secrets', stage: 'pre-upstream', action: 'block', categories: ['secret'], count: 1 },
    ]);
    expect(await t.balance(t.orgId)).toBe(balance);
    // Anthropic's clients get the error in Anthropic's shape.
    const a = await send({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: `key ${AWS_KEY}` }] }, '/v1/messages', { 'anthropic-version': '2023-06-01' });
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ type: 'error', error: { code: 'guardrail_blocked' } });
    expect(t.sim.received().length).toBe(before);
  });

  it('regex, deny_list and max_input_chars block or mask as configured', async () => {
    await patch({ guardrails: [
      { type: 'regex', action: 'mask', patterns: ['PRJ-\\d{4}'], label: 'project_code' },
      { type: 'deny_list', action: 'block', words: ['Falcon'] },
      { type: 'max_input_chars', limit: 200 },
    ] });
    await send(chat('status of PRJ-1234 and PRJ-9876?'));
    expect(lastUpstream()).toContain('[PROJECT_CODE_1] and [PROJECT_CODE_2]');
    const denied = await send(chat('what about project falcon?'));
    expect(denied.status).toBe(400);
    expect((denied.body as { error: { message: string } }).error.message).toContain('deny_list');
    const falconish = await send(chat('what about falconry?'));
    expect(falconish.status).toBe(200);
    const long = await send(chat('x'.repeat(201)));
    expect(long.status).toBe(400);
    expect((long.body as { error: { message: string } }).error.message).toContain('max_input_chars');
  });

  it('a webhook sees the (masked) text and its verdict applies: allow, block, rewrite', async () => {
    await patch({ guardrails: [{ type: 'pii', action: 'mask', entities: ['email'] }, { type: 'webhook', name: 'dlp', url: moderator.url, timeout_ms: 2000, on_error: 'block' }] });
    const ok = await send(chat(`hello ${EMAIL}`));
    expect(ok.status).toBe(200);
    expect(moderator.calls[0]).toMatchObject({ stage: 'pre-upstream', texts: ['hello [EMAIL_1]'], modality: 'chat', model: 'gpt-4o-mini' });
    moderator.answer = { action: 'block', categories: ['harassment'] };
    const no = await send(chat('you are awful'));
    expect(no.status).toBe(400);
    expect((no.body as { error: { message: string } }).error.message).toContain('dlp (harassment)');
    moderator.answer = { action: 'rewrite', texts: ['a kinder request'] };
    const rw = await send(chat('rude words'));
    expect(rw.status).toBe(200);
    expect(lastUpstream()).toContain('a kinder request');
    expect(lastUpstream()).not.toContain('rude words');
    expect((await logRow(t, requestIdOf(rw))).guardrails?.at(-1)).toMatchObject({ guardrail: 'dlp', action: 'rewrite' });
  });

  it('a webhook that times out follows on_error: allow serves the request, block refuses it', async () => {
    moderator.delayMs = 1000;
    await patch({ guardrails: [{ type: 'webhook', name: 'slow', url: moderator.url, timeout_ms: 100, on_error: 'allow' }] });
    const allowed = await send(chat('hello there'));
    expect(allowed.status).toBe(200);
    expect((await logRow(t, requestIdOf(allowed))).guardrails).toEqual([{ guardrail: 'slow', stage: 'pre-upstream', action: 'error', categories: ['unavailable'], count: 0 }]);
    await patch({ guardrails: [{ type: 'webhook', name: 'slow', url: moderator.url, timeout_ms: 100, on_error: 'block' }] });
    const before = t.sim.received().length;
    const refused = await send(chat('hello there'));
    expect(refused.status).toBe(400);
    expect((refused.body as { error: { code: string } }).error.code).toBe('guardrail_blocked');
    expect(t.sim.received().length).toBe(before);
    expect((await logRow(t, requestIdOf(refused))).costMicros).toBe(0);
  });

  it('a streamed reply that trips a post-upstream block ends with an error event and is charged what the upstream charged', async () => {
    await patch({ guardrails: [{ type: 'deny_list', name: 'no-sim', action: 'block', words: ['simulated'], stages: ['post-upstream'] }] });
    const s = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat('say something [[sim:tokens=20]]', { stream: true, stream_options: { include_usage: true } })),
    });
    expect(s.status).toBe(200);
    const text = await s.text();
    expect(text).toContain('guardrail_blocked');
    expect(text).not.toContain('[DONE]');
    const row = await logRow(t, requestIdOf(s));
    expect(row.errorCode).toBe('guardrail_blocked');
    expect(row.completionTokens).toBe(20);
    expect(row.costMicros).toBeGreaterThan(0);
    expect(row.guardrails).toEqual([{ guardrail: 'no-sim', stage: 'post-upstream', action: 'block', categories: ['deny_list'], count: 4 }]);
    // Not streamed: a 400 in the client's format, charged the same way.
    const r = await send(chat('say something [[sim:tokens=20]]'));
    expect(r.status).toBe(400);
    expect((r.body as { error: { code: string } }).error.code).toBe('guardrail_blocked');
    const jsonRow = await logRow(t, requestIdOf(r));
    expect(jsonRow.costMicros).toBe(row.costMicros);
  });

  it('logs bodies redacted, shows them in the request detail, and the sweep deletes them after retention_days (the row stays)', async () => {
    // Emails are masked; phones only checked in replies. `redacted` uses every entity of the project's pii rules: both.
    await patch({
      guardrails: [{ type: 'pii', action: 'mask', entities: ['email'], restore: true }, { type: 'pii', name: 'reply-phones', action: 'block', entities: ['phone'], stages: ['post-upstream'] }],
      body_logging: { mode: 'redacted', retention_days: 2, max_bytes: 4096 },
    });
    const phone = '+1 415 555 0100';
    const r = await send(chat(`mail ${EMAIL}, call ${phone} [[sim:echo_placeholders]]`));
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).toContain(EMAIL);
    const id = requestIdOf(r);
    await logRow(t, id);
    const detail = await owner.get(`/api/v1/orgs/${t.orgId}/logs/${id}`);
    expect(detail.status, JSON.stringify(detail.body)).toBe(200);
    const bodies = detail.body.bodies as { request: string; response: string; truncated: boolean };
    expect(bodies.request).toContain('[EMAIL_1]');
    expect(lastUpstream()).toContain(phone); // not masked on the way…
    expect(bodies.request).toContain('[PHONE_1]'); // …but redacted in the logged body
    expect(bodies.request).not.toContain(EMAIL);
    expect(bodies.request).not.toContain(phone);
    expect(bodies.response).toContain('[EMAIL_1]'); // what the upstream sent: never restored
    expect(bodies.response).not.toContain(EMAIL);
    expect(bodies.truncated).toBe(false);
    expect(detail.body.guardrails).toEqual([
      { guardrail: 'pii', stage: 'pre-upstream', action: 'mask', categories: ['email'], count: 1 },
      { guardrail: 'reply-phones', stage: 'post-upstream', action: 'allow', categories: [], count: 0 },
    ]);
    // A long prompt is cut at max_bytes with a marker.
    const big = await send(chat('word '.repeat(2000)));
    await logRow(t, requestIdOf(big));
    const cut = (await owner.get(`/api/v1/orgs/${t.orgId}/logs/${requestIdOf(big)}`)).body.bodies as { request: string; truncated: boolean };
    expect(cut.truncated).toBe(true);
    expect(cut.request).toContain('[truncated by body_logging.max_bytes]');
    expect(Buffer.byteLength(cut.request)).toBeLessThan(4096 + 100);
    // Three days on, the sweep deletes them; the row and its cost stay.
    expect((await runTask(t, 'request-bodies-retention'))?.result).toMatch(/^deleted 0 /);
    clock.offset = 3 * 86_400_000;
    expect((await runTask(t, 'request-bodies-retention'))?.result).toMatch(/^deleted [1-9]\d* /);
    clock.offset = 0;
    owner = await signIn(t.url, 'owner@guard.test'); // the same run of every task purged the session, 3 days old then
    const after = await owner.get(`/api/v1/orgs/${t.orgId}/logs/${id}`);
    expect(after.body.bodies).toBeNull();
    expect(after.body.cost_usd).toBe(detail.body.cost_usd);
    await patch({ guardrails: [], body_logging: null });
    expect((await owner.get(projectPath)).body.body_logging).toMatchObject({ mode: 'off' });
  });

  it('a moderation guardrail asks the gateway\'s own moderation model and blocks only the categories chosen', async () => {
    await patch({ guardrails: [{ type: 'moderation', categories: ['violence'] }] });
    const chats = (): number => t.sim.received().filter((c) => c.route.endsWith('/chat/completions')).length;
    const moderations = (): number => t.sim.received().filter((c) => c.route.endsWith('/moderations')).length;
    const [c0, m0] = [chats(), moderations()];
    const ok = await send(chat('a calm question'));
    expect(ok.status).toBe(200);
    expect([chats(), moderations()]).toEqual([c0 + 1, m0 + 1]);
    const flagged = await send(chat('[[sim:flagged]] something violent'));
    expect(flagged.status).toBe(400);
    expect((flagged.body as { error: { message: string } }).error.message).toContain('moderation (violence)');
    expect([chats(), moderations()]).toEqual([c0 + 1, m0 + 2]);
    await patch({ guardrails: [{ type: 'moderation', categories: ['sexual'] }] });
    expect((await send(chat('[[sim:flagged]] something violent'))).status).toBe(200);
  });

  it('counts every verdict in tollgate_guardrail_verdicts_total{guardrail,action}', async () => {
    const text = await (await fetch(t.gateway.metricsUrl ?? '')).text();
    const count = (guardrail: string, action: string): number => Number(new RegExp(`^tollgate_guardrail_verdicts_total\\{guardrail="${guardrail}",action="${action}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    expect(count('pii', 'mask')).toBeGreaterThanOrEqual(5);
    expect(count('no-secrets', 'block')).toBe(2);
    expect(count('slow', 'error')).toBe(1);
    expect(count('no-sim', 'block')).toBe(2);
  });

  it('PATCH refuses an unknown type, a bad action and a regex that does not compile, keeping the guardrails', async () => {
    await patch({ guardrails: [{ type: 'pii', action: 'block' }] });
    for (const bad of [[{ type: 'nope' }], [{ type: 'pii', action: 'burn' }], [{ type: 'regex', action: 'block', patterns: ['(unclosed'] }]]) {
      const r = await owner.patch(projectPath, { guardrails: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await owner.get(projectPath)).body.guardrails).toEqual([{ type: 'pii', action: 'block' }]);
    await patch({ guardrails: [] });
  });
});
