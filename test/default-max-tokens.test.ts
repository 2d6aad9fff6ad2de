import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway, type OrgTestGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';
import { cli, defaultProject, KEY, lastLine, sleep, STACK_FRAME, useCliServer } from './cli-helpers.js';
import { type Api, ownerWithProject } from './management-helpers.js';

/**
 * Issue 29: a default max_tokens for clients that send no output bound (docs/chat.md,
 * "The max_tokens rule"). Off by default; `settings.chat.default_max_tokens` in
 * gateway.yaml, and a project's `default_max_tokens` that wins over it. The default is
 * sent upstream, reserved for, and shown in the log row; a client's own bound stays.
 */

const YAML_DEFAULT = 600;
const MESSAGES_HEADERS = { 'anthropic-version': '2023-06-01' };

type Body = Record<string, unknown>;
/** The body of the simulator's last call (the upstream request the gateway sent). */
const lastUpstream = (t: OrgTestGateway): { route: string; body: Body } => {
  const call = t.sim.received().at(-1);
  if (!call) throw new Error('the simulator received nothing');
  return { route: call.route, body: JSON.parse(call.body) as Body };
};
const messages = (t: OrgTestGateway, key: string, body: Body) => postJson(`${t.url}/v1/messages`, body, undefined, { 'x-api-key': key, ...MESSAGES_HEADERS });
const requestIdOf = (r: { headers: Headers }): string => r.headers.get('x-request-id') ?? '';
const hi = [{ role: 'user', content: 'Hi' }];

describe('with neither a project nor gateway.yaml default', () => {
  const t = useOrgGateway('dmt-off', '5', {}, { ledger: true });

  it('a Messages request for a Claude model without max_tokens still gets Anthropic\'s 400, and nothing was added upstream', async () => {
    const r = await messages(t, t.key, { model: 'claude-haiku-4-5', messages: hi });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: 'error', error: { message: 'max_tokens: Field required', code: 'gateway_error' } });
    const up = lastUpstream(t);
    expect(up.route).toBe('POST /anthropic/v1/messages');
    expect(up.body).not.toHaveProperty('max_tokens');
    const row = await logRow(t, requestIdOf(r));
    expect(row.extra ?? {}).not.toHaveProperty('default_max_tokens');
  });
});

describe('with settings.chat.default_max_tokens in gateway.yaml', () => {
  const t = useOrgGateway('dmt-yaml', '5', { yaml: { settings: { chat: { default_max_tokens: YAML_DEFAULT } } } }, { ledger: true });

  it('a Messages request without max_tokens is sent to Anthropic with max_tokens = the default, is bound by it, and the log row shows it', async () => {
    const r = await messages(t, t.key, { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: '[[sim:tokens=700]] write' }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const up = lastUpstream(t);
    expect(up.route).toBe('POST /anthropic/v1/messages');
    expect(up.body.max_tokens).toBe(YAML_DEFAULT);
    expect(r.body).toMatchObject({ stop_reason: 'max_tokens', usage: { output_tokens: YAML_DEFAULT } }); // the upstream really stopped there
    const row = await logRow(t, requestIdOf(r));
    expect(row.extra).toMatchObject({ default_max_tokens: YAML_DEFAULT });
  });

  it('every format without a bound carries the default upstream under its own name, translated or passed through', async () => {
    const cases: Array<{ url: string; body: Body; headers?: Record<string, string>; route: string; bound: (b: Body) => unknown }> = [
      { url: '/v1/chat/completions', body: { model: 'claude-sonnet-4-5', messages: hi }, route: 'POST /anthropic/v1/messages', bound: (b) => b.max_tokens },
      { url: '/v1/chat/completions', body: { model: 'gpt-4o', messages: hi }, route: 'POST /openai/v1/chat/completions', bound: (b) => b.max_tokens },
      { url: '/v1/responses', body: { model: 'gpt-4o', input: 'Hi' }, route: 'POST /openai/v1/responses', bound: (b) => b.max_output_tokens },
      { url: '/v1/responses', body: { model: 'claude-haiku-4-5', input: 'Hi' }, route: 'POST /anthropic/v1/messages', bound: (b) => b.max_tokens },
      {
        url: '/v1beta/models/gemini-2.5-flash:generateContent', body: { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { temperature: 0.5 } },
        route: 'POST /gemini/v1beta/models/gemini-2.5-flash:generateContent', bound: (b) => (b.generationConfig as Body).maxOutputTokens,
      },
      { url: '/v1beta/models/claude-haiku-4-5:generateContent', body: { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }, route: 'POST /anthropic/v1/messages', bound: (b) => b.max_tokens },
    ];
    for (const c of cases) {
      const r = await postJson(`${t.url}${c.url}`, c.body, t.key);
      expect(r.status, `${c.url} ${JSON.stringify(r.body)}`).toBe(200);
      const up = lastUpstream(t);
      expect(up.route, c.url).toBe(c.route);
      expect(c.bound(up.body), `${c.url} → ${c.route}`).toBe(YAML_DEFAULT);
      expect((await logRow(t, requestIdOf(r))).extra, c.url).toMatchObject({ default_max_tokens: YAML_DEFAULT });
    }
  });

  it('the Gemini pass-through keeps the client\'s other generationConfig fields beside the default', async () => {
    const r = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { temperature: 0.5 } }, t.key);
    expect(r.status).toBe(200);
    expect(lastUpstream(t).body.generationConfig).toEqual({ temperature: 0.5, maxOutputTokens: YAML_DEFAULT });
  });

  it('the credit hold is computed from the default: a balance that covers its bound but not the model\'s whole output is served', async () => {
    // gpt-4o could write 16384 tokens at $10/M ($0.16): unbounded, $0.05 is refused (402). Bound to 600 ($0.006) it is served.
    const poor = await t.org('dmt-poor', '0.05');
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o', messages: hi }, poor.key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(lastUpstream(t).body.max_tokens).toBe(YAML_DEFAULT);
    await expectLedgerMatchesLog(t, poor.org.id);
  });

  it('and a Claude request is held for the default\'s output: 600 tokens of claude-opus-4-1 ($0.045) are more than $0.04', async () => {
    const poor = await t.org('dmt-poorer', '0.04');
    const before = t.sim.received().length;
    const r = await messages(t, poor.key, { model: 'claude-opus-4-1', messages: hi });
    expect(r.status).toBe(402); // without the default only the prompt is held, and the provider's 400 comes back
    const upTo = /may cost up to \$([\d.]+)/.exec(JSON.stringify(r.body))?.[1];
    expect(Number(upTo)).toBeGreaterThanOrEqual(0.045);
    expect(Number(upTo)).toBeLessThan(0.048); // and the prompt's bound
    expect(t.sim.received().length).toBe(before);
    expect(await t.balance(poor.org.id)).toBe(40_000);
  });

  it('a client\'s own bound is never replaced, in any format', async () => {
    const cases: Array<{ url: string; body: Body; bound: (b: Body) => unknown }> = [
      { url: '/v1/messages', body: { model: 'claude-haiku-4-5', max_tokens: 7, messages: hi }, bound: (b) => b.max_tokens },
      { url: '/v1/chat/completions', body: { model: 'claude-haiku-4-5', max_tokens: 8, messages: hi }, bound: (b) => b.max_tokens },
      { url: '/v1/chat/completions', body: { model: 'gpt-4o', max_completion_tokens: 9, messages: hi }, bound: (b) => b.max_completion_tokens },
      { url: '/v1/responses', body: { model: 'gpt-4o', max_output_tokens: 20, input: 'Hi' }, bound: (b) => b.max_output_tokens },
      { url: '/v1beta/models/gemini-2.5-flash:generateContent', body: { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { maxOutputTokens: 11 } }, bound: (b) => (b.generationConfig as Body).maxOutputTokens },
    ];
    for (const c of cases) {
      const r = c.url === '/v1/messages' ? await messages(t, t.key, c.body) : await postJson(`${t.url}${c.url}`, c.body, t.key);
      expect(r.status, `${c.url} ${JSON.stringify(r.body)}`).toBe(200);
      const sent = c.bound(lastUpstream(t).body);
      expect(sent, c.url).not.toBe(YAML_DEFAULT);
      expect(sent, c.url).toBe(c.url === '/v1/messages' ? 7 : c.bound(c.body));
      expect((await logRow(t, requestIdOf(r))).extra ?? {}, c.url).not.toHaveProperty('default_max_tokens');
    }
  });
});

describe('a project\'s default_max_tokens', () => {
  const t = useOrgGateway('dmt-project', '5', { yaml: { settings: { chat: { default_max_tokens: YAML_DEFAULT } } } }, { ledger: true });
  let owner: Api;
  let projectPath: string;
  let key: string;
  beforeAll(async () => {
    let project: Body;
    ({ owner, project, path: projectPath, key } = await ownerWithProject(t, 'dmt-project', 'owner@dmt.test', 'agents', 'sdk'));
    expect(project.default_max_tokens).toBeNull();
  });

  it('is set by PATCH, shown by the response and GET, and wins over gateway.yaml\'s', async () => {
    const r = await owner.patch(projectPath, { default_max_tokens: 42 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.default_max_tokens).toBe(42);
    expect(r.body.limits).toEqual({ rpm: null, tpm: null, max_concurrent: null, budget_usd: null, budget_period: null, mode: null }); // limits untouched
    expect((await owner.get(projectPath)).body.default_max_tokens).toBe(42);
    const listed = (await owner.get(`/api/v1/orgs/${t.orgId}/projects`)).body.data as Body[];
    expect(listed.find((p) => p.name === 'agents')?.default_max_tokens).toBe(42);
    const chat = await messages(t, key, { model: 'claude-haiku-4-5', messages: hi });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expect(lastUpstream(t).body.max_tokens).toBe(42);
    expect((await logRow(t, requestIdOf(chat))).extra).toMatchObject({ default_max_tokens: 42 });
    // The org's other project has none: gateway.yaml's applies there.
    await messages(t, t.key, { model: 'claude-haiku-4-5', messages: hi });
    expect(lastUpstream(t).body.max_tokens).toBe(YAML_DEFAULT);
  });

  it('PATCH refuses 0, 1.5, "x" and 1,000,001 with a 400 naming the field, and keeps the value', async () => {
    for (const bad of [0, 1.5, 'x', 1_000_001]) {
      const r = await owner.patch(projectPath, { default_max_tokens: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect((r.body as unknown as ErrorBody).error).toMatchObject({ code: 'invalid_request', param: 'default_max_tokens' });
      expect((r.body as unknown as ErrorBody).error.message).toMatch(/^Default max_tokens must be /); // in words; param names the field
    }
    expect((await owner.get(projectPath)).body.default_max_tokens).toBe(42);
  });

  it('PATCH with null clears it: gateway.yaml\'s default applies again', async () => {
    const r = await owner.patch(projectPath, { default_max_tokens: null });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.default_max_tokens).toBeNull();
    const chat = await messages(t, key, { model: 'claude-haiku-4-5', messages: hi });
    expect(chat.status).toBe(200);
    expect(lastUpstream(t).body.max_tokens).toBe(YAML_DEFAULT);
  });

  it('PATCH with limits alone still works and leaves the default as it is', async () => {
    expect((await owner.patch(projectPath, { default_max_tokens: 77 })).status).toBe(200);
    const r = await owner.patch(projectPath, { limits: { rpm: 100 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ default_max_tokens: 77, limits: { rpm: 100 } });
  });
});

describe('gateway projects update --default-max-tokens', { timeout: 60_000 }, () => {
  const env = useCliServer('tollgate-cli-dmt-');
  const column = (): unknown => defaultProject(env.db, 'default_max_tokens')?.default_max_tokens;

  it('sets it and prints it; the running server sends it upstream for a request without max_tokens', async () => {
    const k = await cli(['keys', 'create', '--org', 'acme', '--config', env.config]);
    const key = lastLine(k.stdout);
    expect(key).toMatch(KEY);
    const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--default-max-tokens', '64', '--config', env.config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('project "default" in "acme": default max_tokens 64\n');
    expect(column()).toBe(64);
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      if (i > 0) await sleep(100);
      status = (await postJson(`${env.server.url}/v1/messages`, { model: 'claude-haiku-4-5', messages: hi }, undefined, { 'x-api-key': key, ...MESSAGES_HEADERS })).status;
    }
    expect(status).toBe(200);
    const call = env.sim.received().at(-1);
    expect(JSON.parse(call?.body ?? '{}')).toMatchObject({ max_tokens: 64 });
  });

  it('refuses a bad value (exit 1, nothing written) and clears it with none', async () => {
    for (const bad of ['0', '1.5', 'x', '1000001']) {
      const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--default-max-tokens', bad, '--config', env.config]);
      expect(r.code, bad).toBe(1);
      expect(r.stderr, bad).toMatch(/--default-max-tokens.*must be a whole number from 1 to 1000000/);
    }
    const none = await cli(['projects', 'update', 'default', '--org', 'acme', '--config', env.config]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/give --default-max-tokens/);
    expect(none.stderr).not.toMatch(STACK_FRAME);
    expect(column()).toBe(64);
    const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--default-max-tokens', 'none', '--config', env.config]);
    expect(r.stdout).toBe('project "default" in "acme": default max_tokens none\n');
    expect(column()).toBeNull();
  });
});
