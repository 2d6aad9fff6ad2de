import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../simulator/server.js';
import { createKey } from '../src/tenancy/admin.js';
import { type OrgTestGateway, useOrgGateway } from './fixtures.js';
import { addUser, signIn } from './management-helpers.js';
import { copyProviders, expectEveryLedgerExact, logRow, postJson, simulatorOverrides, tempDir, type TestGateway, type TestGatewayOptions } from './harness.js';

/*
 * Routing over several keys (deployments) of a provider, model groups and hot reload
 * (issue 31, docs/routing.md), each on a gateway in front of its own simulator, whose
 * per-key counters say which deployment got each request. The cooldown shared by three instances
 * is in routing-fleet.test.ts. Every org's ledger equals its logged costs after each test.
 */

/** A describe's gateway, in front of a simulator of its own, with an org holding `credits`; every org's ledger exact after each test and at close. */
function useRoutingGateway(org: string, credits: string, setup: (sim: Simulator) => TestGatewayOptions): OrgTestGateway {
  const t = useOrgGateway(org, credits, setup);
  afterEach(async () => expectEveryLedgerExact(t));
  return t;
}

const openaiBase = (sim: Simulator): string => simulatorOverrides(sim.url).openai!.base_url;
/** How many requests the gateway's simulator got with the upstream key `key`. */
const calls = (t: TestGateway, key: string): number => t.sim.keyCalls()[key]?.calls ?? 0;

interface ChatReply { status: number; headers: Headers; body: { model?: string; error?: { code: string }; usage?: { cost_usd_total?: number } } }
async function chat(t: TestGateway, key: string, content: string, model = 'gpt-4o-mini'): Promise<ChatReply> {
  const r = await postJson(`${t.url}/v1/chat/completions`, { model, max_tokens: 20, messages: [{ role: 'user', content }] }, key);
  return r as ChatReply;
}

/** `total` requests, at most `concurrency` at a time; every reply, in order. Bounded by construction. */
async function load<T>(total: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(total);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < total; i = next++) out[i] = await fn(i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: the edits reach deep into an untyped gateway.yaml (y.providers.openai.keys)
type Yaml = Record<string, any>;

/** Rewrites the gateway's own gateway.yaml (JSON is YAML) through `change`. */
function editConfig(t: TestGateway, change: (yaml: Yaml) => void): void {
  const file = t.config.file;
  const yaml = JSON.parse(readFileSync(file, 'utf8')) as Yaml;
  change(yaml);
  writeFileSync(file, JSON.stringify(yaml, null, 2));
}

/** A sink for the server log at error level: what an operator would see. */
function logSink(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk: Buffer, _enc, cb) { lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)); cb(); } });
  return { stream, lines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function metricsText(t: TestGateway): Promise<string> {
  return (await fetch(t.gateway.metricsUrl!)).text();
}

describe('several keys of one provider', () => {
  const log = logSink();
  const t = useRoutingGateway('routing-keys', '20', (sim) => ({
    logStream: log.stream,
    yaml: {
      log: { level: 'error', flush_interval_ms: 20 }, metrics: { port: 0 }, routing: { watch: false },
      providers: {
        openai: { base_url: openaiBase(sim), keys: [{ name: 'east', api_key: 'w-east', weight: 3 }, { name: 'west', api_key: 'w-west', weight: 1 }] },
        // One key the provider refuses (the simulator refuses bad-…), beside a good one.
        groq: { base_url: simulatorOverrides(sim.url).groq!.base_url, keys: [{ name: 'revoked', api_key: 'bad-revoked' }, { name: 'good', api_key: 'g-good' }] },
      },
    },
  }));

  it('spreads 400 requests 3:1 by weight (east\'s share within ±10 % of 75 %), every one served and logged with its deployment', async () => {
    const [e0, w0] = [calls(t, 'w-east'), calls(t, 'w-west')];
    const replies = await load(400, 40, (i) => chat(t, t.key, `weights ${i}`));
    expect(replies.filter((r) => r.status !== 200).map((r) => r.body.error?.code)).toEqual([]);
    const east = calls(t, 'w-east') - e0;
    const west = calls(t, 'w-west') - w0;
    expect(east + west).toBe(400);
    expect(east / 400).toBeGreaterThanOrEqual(0.75 * 0.9);
    expect(east / 400).toBeLessThanOrEqual(0.75 * 1.1);
    const row = await logRow(t, (await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'which' }] }, t.key)).headers.get('x-request-id')!);
    expect(['east', 'west']).toContain(row.deployment);
    expect(row.attempts.at(-1)?.deployment).toBe(row.deployment);
    expect(await metricsText(t)).toMatch(/tollgate_deployment_requests_total\{provider="openai",deployment="east",status="200"\} \d+/);
  });

  it('takes a key the provider refuses (401) out until the config changes: no client sees it, an error-level log and a metric say so', async () => {
    const replies = await load(20, 4, (i) => chat(t, t.key, `rejected ${i}`, 'llama-3.1-8b-instant'));
    expect(replies.map((r) => r.status)).toEqual(new Array(20).fill(200));
    // At most the requests in flight when it was first refused went there: then none.
    expect(calls(t, 'bad-revoked')).toBeGreaterThanOrEqual(1);
    expect(calls(t, 'bad-revoked')).toBeLessThanOrEqual(4);
    const before = calls(t, 'bad-revoked');
    await load(20, 1, (i) => chat(t, t.key, `after ${i}`, 'llama-3.1-8b-instant'));
    expect(calls(t, 'bad-revoked')).toBe(before);
    const errors = log.lines().filter((l) => l.deployment === 'revoked');
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors[0]).toMatchObject({ level: 50, provider: 'groq', status: 401 });
    expect(JSON.stringify(errors)).not.toContain('bad-revoked');
    const metrics = await metricsText(t);
    expect(metrics).toContain('tollgate_deployment_state{provider="groq",deployment="revoked"} 2');
    expect(metrics).toContain('tollgate_deployment_state{provider="groq",deployment="good"} 0');
    expect(metrics).toMatch(/tollgate_deployment_key_rejections_total\{provider="groq",deployment="revoked"\} [1-4]\n/);
  });
});

describe('strategies and capacity', () => {
  const t = useRoutingGateway('routing-strategies', '20', (sim) => ({
    yaml: {
      routing: { strategy: 'least_busy', watch: false },
      providers: {
        openai: { base_url: openaiBase(sim), keys: [{ name: 'a', api_key: 'lb-a' }, { name: 'b', api_key: 'lb-b' }] },
        // Capacity: "small" takes 5 requests a minute whatever its weight; "big" takes the rest.
        mistral: { base_url: simulatorOverrides(sim.url).mistral!.base_url, keys: [{ name: 'small', api_key: 'cap-small', weight: 1000, rpm: 5 }, { name: 'big', api_key: 'cap-big', weight: 1 }] },
      },
    },
  }));

  it('least_busy sends no new request to the deployment holding the most in flight', async () => {
    const slow = chat(t, t.key, 'hold me [[sim:delay_ms=2500]]');
    // The slow request reached one key; which one is the strategy's (both were idle).
    for (let i = 0; i < 200 && calls(t, 'lb-a') + calls(t, 'lb-b') === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const holder = calls(t, 'lb-a') === 1 ? 'lb-a' : 'lb-b';
    const other = holder === 'lb-a' ? 'lb-b' : 'lb-a';
    expect(calls(t, holder)).toBe(1);
    const quick = await load(20, 1, (i) => chat(t, t.key, `quick ${i}`));
    expect(quick.map((r) => r.status)).toEqual(new Array(20).fill(200));
    expect(calls(t, holder)).toBe(1);
    expect(calls(t, other)).toBe(20);
    expect((await slow).status).toBe(200);
  });

  it('skips a deployment at its rpm capacity instead of refusing the request', async () => {
    const replies = await load(20, 1, (i) => chat(t, t.key, `capacity ${i}`, 'mistral-small-latest'));
    expect(replies.map((r) => r.status)).toEqual(new Array(20).fill(200));
    expect(calls(t, 'cap-small')).toBe(5);
    expect(calls(t, 'cap-big')).toBe(15);
  });
});

describe('model groups', () => {
  const provider = (sim: Simulator, id: string, price: string) => `
id: ${id}
name: ${id}
base_url: ${sim.url}/${id}/v1
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  chat: { path: /chat/completions, dialect: openai }
models:
  - { id: ${id}-1, modality: chat, max_output_tokens: 100, pricing: { prompt: "${price}", completion: "${price}" } }
`;
  const t = useRoutingGateway('routing-groups', '20', (sim) => {
    const dir = copyProviders(tempDir());
    writeFileSync(join(dir, 'ga.yaml'), provider(sim, 'ga', '0.000001'));
    writeFileSync(join(dir, 'gb.yaml'), provider(sim, 'gb', '0.000002'));
    writeFileSync(join(dir, 'gc.yaml'), provider(sim, 'gc', '0.000005'));
    return {
      providersDir: dir,
      yaml: {
        routing: { watch: false },
        providers: { ga: { api_key: 'ga-key' }, gb: { api_key: 'gb-key' }, gc: { api_key: 'gc-key' } },
        models: { smart: { targets: ['ga-1', 'gb-1'], strategy: 'weighted', fallbacks: ['gc-1'] } },
      },
    };
  });

  it('is requested by name like a model and listed in /v1/models', async () => {
    const r = await chat(t, t.key, 'hello group', 'smart');
    expect(r.status).toBe(200);
    expect(r.body.model).toBe('smart');
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect(['ga-1', 'gb-1']).toContain(row.usedModel);
    const models = (await (await fetch(`${t.url}/v1/models`)).json()) as { data: Array<{ id: string; group?: { targets: string[] } }> };
    expect(models.data.find((m) => m.id === 'smart')?.group?.targets).toEqual(['ga-1', 'gb-1']);
  });

  it('falls back to its fallback model when every target is down, before the first byte, billed at the model that served', async () => {
    const before = await t.balance(t.orgId);
    const r = await chat(t, t.key, 'all down [[sim@ga:status=503]] [[sim@gb:status=500]]', 'smart');
    expect(r.status).toBe(200);
    expect(r.body.model).toBe('smart');
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect(row.usedProvider).toBe('gc');
    expect(row.usedModel).toBe('gc-1');
    expect(row.attempts.map((a) => a.provider).sort()).toEqual(['ga', 'gb', 'gc']);
    // Billed at gc-1's price: (prompt + completion tokens) × $0.000005.
    expect(row.costMicros).toBe(((row.promptTokens ?? 0) + (row.completionTokens ?? 0)) * 5);
    expect(before - (await t.balance(t.orgId))).toBe(row.costMicros);
  });

  it('lets a key allowed only the group use its targets through it, and not directly', async () => {
    const { key: narrow } = await createKey(t.gateway.store, 'routing-groups', { allowedModels: ['smart'] });
    expect((await chat(t, narrow, 'through the group', 'smart')).status).toBe(200);
    const direct = await chat(t, narrow, 'direct', 'ga-1');
    expect(direct.status).toBe(403);
    expect(direct.body.error?.code).toBe('model_not_allowed');
  });
});

describe('hot reload', () => {
  const t = useRoutingGateway('routing-reload', '50', (sim) => ({
    yaml: {
      metrics: { port: 0 }, routing: { watch: false },
      providers: { openai: { base_url: openaiBase(sim), keys: [{ name: 'east', api_key: 'r-east', weight: 1 }, { name: 'west', api_key: 'r-west', weight: 1 }] } },
    },
  }));
  beforeAll(async () => {
    await addUser(t, 'ops@routing.test', { operator: true });
  });

  it('a reload that changes the weights takes effect without a restart and loses no request under load', async () => {
    let reloaded = false;
    const [e0, w0] = [calls(t, 'r-east'), calls(t, 'r-west')];
    let atReload = { east: 0, west: 0 };
    const replies = await load(400, 20, async (i) => {
      if (i === 200) {
        editConfig(t, (y) => {
          y.providers.openai.keys = [{ name: 'east', api_key: 'r-east', weight: 1 }, { name: 'west', api_key: 'r-west', weight: 10000 }];
        });
        expect(t.gateway.reload()).toMatchObject({ result: 'ok', restartNeeded: [] });
        atReload = { east: calls(t, 'r-east'), west: calls(t, 'r-west') };
        reloaded = true;
      }
      return chat(t, t.key, `reload ${i}`);
    });
    expect(reloaded).toBe(true);
    expect(replies.filter((r) => r.status !== 200)).toEqual([]);
    expect(calls(t, 'r-east') - e0 + calls(t, 'r-west') - w0).toBe(400);
    // After the swap (the ≤ 20 requests already routed excepted), east gets ~1 in 10,001.
    expect(calls(t, 'r-east') - atReload.east).toBeLessThanOrEqual(20 + 2);
    expect(calls(t, 'r-west') - atReload.west).toBeGreaterThanOrEqual(200 - 22);
    const after = await load(50, 5, (i) => chat(t, t.key, `after reload ${i}`));
    expect(after.every((r) => r.status === 200)).toBe(true);
  });

  it('a broken reload keeps the running config serving, names file:line, counts the error; POST /api/v1/reload answers 422', async () => {
    const good = readFileSync(t.config.file, 'utf8');
    editConfig(t, (y) => {
      y.models = { smart: { targets: ['no-such-model'] } };
    });
    const r = t.gateway.reload();
    expect(r.result).toBe('error');
    expect(r.problems.join('\n')).toMatch(new RegExp(`${t.config.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+: /models/smart/targets/0: no provider serves the model "no-such-model"`));
    const ops = await signIn(t.url, 'ops@routing.test');
    const api = await ops.post('/api/v1/reload');
    expect(api.status).toBe(422);
    expect((api.body.error as { code: string }).code).toBe('config_invalid');
    const replies = await load(30, 5, (i) => chat(t, t.key, `still serving ${i}`));
    expect(replies.every((x) => x.status === 200)).toBe(true);
    expect(await metricsText(t)).toMatch(/tollgate_config_reloads_total\{result="error"\} 2/);
    writeFileSync(t.config.file, good);
  });

  it('POST /api/v1/reload (operators) applies a good file, names settings that need a restart, and is in the audit log; GET /api/v1/deployments shows the keys', async () => {
    editConfig(t, (y) => {
      y.server.shutdown_timeout_ms = 4000;
      y.providers.openai.keys = [{ name: 'east', api_key: 'r-east', weight: 2 }, { name: 'west', api_key: 'r-west', weight: 1, rpm: 100 }];
    });
    const ops = await signIn(t.url, 'ops@routing.test');
    const r = await ops.post('/api/v1/reload');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ result: 'ok', trigger: 'api', restart_needed: ['server.shutdown_timeout_ms'] });
    const d = await ops.get('/api/v1/deployments');
    expect(d.status).toBe(200);
    const openai = (d.body.data as Array<Record<string, unknown>>).filter((x) => x.provider === 'openai');
    expect(openai.map((x) => [x.name, x.weight, x.rpm, x.state])).toEqual([['east', 2, null, 'healthy'], ['west', 1, 100, 'healthy']]);
    expect(JSON.stringify(d.body)).not.toContain('r-east');
    const audit = await ops.get('/api/v1/audit?action=config.reload');
    expect((audit.body.data as unknown[]).length).toBeGreaterThanOrEqual(1);
    const member = await addUser(t, 'member@routing.test');
    expect(member).toBeTruthy();
    expect((await (await signIn(t.url, 'member@routing.test')).get('/api/v1/deployments')).status).toBe(403);
  });
});

describe('hot reload on file change', () => {
  const t = useRoutingGateway('routing-watch', '5', (sim) => ({
    yaml: { providers: { openai: { base_url: openaiBase(sim), keys: [{ name: 'only', api_key: 'fw-one' }] } } },
  }));

  it('re-reads gateway.yaml when it changes (debounced) and serves the new keys', async () => {
    expect((await chat(t, t.key, 'before')).status).toBe(200);
    expect(calls(t, 'fw-one')).toBe(1);
    editConfig(t, (y) => {
      y.providers.openai.keys = [{ name: 'next', api_key: 'fw-two' }];
    });
    // The watch fires within the debounce; bounded wait for the swap.
    for (let i = 0; i < 300 && !t.gateway.catalog.providers.get('openai')?.deployments?.some((d) => d.name === 'next'); i++) await new Promise((r) => setTimeout(r, 20));
    expect((await chat(t, t.key, 'after')).status).toBe(200);
    expect(calls(t, 'fw-one')).toBe(1);
    expect(calls(t, 'fw-two')).toBe(1);
  });
});
