import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type GatewayConfig, loadGatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';
import { selectPlugins } from '../plugins/index.js';
import { createGateway } from '../src/gateway.js';
import { packageRoot } from '../src/lib/paths.js';
import type { GatewayPlugin, StageHook } from '../src/pipeline/plugin.js';
import { STAGES } from '../src/pipeline/stages.js';
import { GatewayError } from '../src/lib/errors.js';
import { logRow, postJson, startTestGateway, tempDir, type TestGateway } from './harness.js';

const opened: TestGateway[] = [];
afterAll(async () => {
  for (const t of opened) await t.close();
});

/** A plugin that serves no modality and hooks one stage. */
const hookPlugin = (name: string, stage: string, hook: StageHook): GatewayPlugin => ({ name, modalities: {}, register: (api) => api.hook(stage, hook) });

/** A gateway (closed after the file, its ledgers checked) with `plugin` loaded, and an org holding $1 with its key. */
async function gatewayWith(plugin: GatewayPlugin, orgName: string): Promise<{ t: TestGateway; orgId: string; key: string }> {
  const t = await startTestGateway({ extraPlugins: [plugin], checkLedgersAfterClose: true });
  opened.push(t);
  const { org, key } = await t.org(orgName, '1');
  return { t, orgId: org.id, key };
}

/** A gateway.yaml with a database and the provider files only, loaded: for the boots that must fail. */
function bareConfig(): GatewayConfig {
  const dir = tempDir();
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `database: { url: "sqlite:${join(dir, 'g.db')}" }\nproviders_dir: ${join(packageRoot(), 'providers')}\n`);
  return loadGatewayConfig(file, compileSchemas());
}

describe('plugins and stages', () => {
  it('runs every stage in order for a model request, post-billing after the reply', async () => {
    const seen: string[] = [];
    const recorder: GatewayPlugin = {
      name: 'recorder',
      modalities: {},
      register(api) {
        for (const stage of STAGES) api.hook(stage, (ex) => { if (ex.modality === 'chat') seen.push(stage); });
      },
    };
    const { t, key } = await gatewayWith(recorder, 'stages');
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, key);
    expect(r.status).toBe(200);
    for (let i = 0; i < 50 && seen.length < STAGES.length; i++) await new Promise((res) => setTimeout(res, 10));
    expect(seen).toEqual([...STAGES]);
  });

  it('a pre-upstream hook may answer the request itself: no upstream call, charged what it says, logged once', async () => {
    const answering = hookPlugin('answering', 'pre-upstream', (_ex, req) => {
      if (req?.model !== 'gpt-4o-mini' || !req.prompt?.includes('short-circuit')) return undefined;
      if (req.prompt.includes('refuse')) throw new GatewayError('invalid_request', ['refused by a hook']);
      return {
        async respond(ctx) {
          ctx.reply.code(200).header('content-type', 'application/json').send({ answered_by: 'hook', id: ctx.ex.id });
          return { costPicos: 1_234_000_000n };
        },
      };
    });
    const { t, orgId, key } = await gatewayWith(answering, 'short');
    const before = t.sim.received().length;
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'please short-circuit' }] }, key);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ answered_by: 'hook' });
    expect(t.sim.received().length).toBe(before);
    expect(await t.balance(orgId)).toBe(1_000_000 - 1234);
    const refused = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'short-circuit refuse' }] }, key);
    expect(refused.status).toBe(400);
    expect(t.sim.received().length).toBe(before);
    expect(await t.balance(orgId)).toBe(1_000_000 - 1234);
    const served = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, key);
    expect(served.status).toBe(200);
    expect(t.sim.received().length).toBe(before + 1);
  });

  it("records what a reply's result says (cost rounded once, usage, log fields) and stamps the stream's first byte itself", async () => {
    const metering = hookPlugin('metering', 'pre-upstream', (_ex, req) => {
      if (!req?.prompt?.startsWith('metered')) return undefined;
      return {
        async respond(ctx) {
          const out = ctx.openStream({ 'content-type': 'text/plain' }, { tokens: true });
          await out.write('x'.repeat(64 * 1024));
          const reached = await out.end('done');
          // 2.5 µUSD: rounded half to even, once, by the core.
          return {
            costPicos: 2_500_000n, usage: { input: 11, output: 7, cachedInput: 0, reasoning: 0 }, extra: { measured: 'here' },
            errorCode: reached ? undefined : 'client_closed_request',
          };
        },
      };
    });
    const { t, orgId, key } = await gatewayWith(metering, 'metered');
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'metered please' }] }),
    });
    expect(r.status).toBe(200);
    expect((await r.text()).length).toBe(64 * 1024 + 4);
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 200, costMicros: 2, promptTokens: 11, completionTokens: 7, errorCode: null, extra: { measured: 'here' } });
    expect(row.ttfbMs).not.toBeNull();
    expect(row.ttfbMs!).toBeLessThanOrEqual(row.durationMs);
    expect(await t.balance(orgId)).toBe(1_000_000 - 2);
  });

  it('a hook on an unknown stage fails the boot with a clear error', async () => {
    const bad = hookPlugin('typo', 'post-upstraem', () => undefined);
    const config = bareConfig();
    await expect(createGateway({ config, plugins: selectPlugins(config, [bad]) })).rejects.toThrow(
      'plugin "typo" registers a hook on unknown stage "post-upstraem"; stages are: pre-auth, auth, pre-upstream, upstream, post-upstream, billing, post-billing',
    );
  });

  it('two plugins claiming one modality fail the boot', async () => {
    const dup: GatewayPlugin = { name: 'chat2', modalities: { chat: { requiredPricing: [], dialects: [] } }, register: () => undefined };
    const config = bareConfig();
    await expect(createGateway({ config, plugins: selectPlugins(config, [dup]) })).rejects.toThrow(/both serve modality "chat"/);
  });

  it('serves only the plugins it is given: the core brings none of its own', async () => {
    const config = bareConfig();
    // The provider files declare chat, audio and music endpoints: with no plugin loaded, nothing serves them.
    await expect(createGateway({ config, plugins: [] })).rejects.toThrow(/no loaded plugin serves the modality "chat"/);
  });
});
