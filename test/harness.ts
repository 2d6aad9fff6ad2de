import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { expect } from 'vitest';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import { loadGatewayConfig, type GatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';
import { selectPlugins } from '../plugins/index.js';
import { createGateway, type Gateway } from '../src/gateway.js';
import type { GatewayPlugin } from '../src/pipeline/plugin.js';
import { packageRoot } from '../src/lib/paths.js';
import { SIM_AWS } from '../simulator/aws-sigv4.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { openStore } from '../src/store/index.js';
import type { LogRow, Org, Retention, Store } from '../src/store/types.js';

/** A temporary folder removed by `cleanup`. */
export function tempDir(prefix = 'tollgate-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A copy of the repo's providers/ in a temp folder, so a test can add or break provider files. */
export function copyProviders(dir: string): string {
  const target = join(dir, 'providers');
  cpSync(join(packageRoot(), 'providers'), target, { recursive: true });
  return target;
}

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved as they came. */
  output: string;
}

/** Runs a command to its end (SIGKILLed after `timeoutMs`, so it is bounded), with no stdin. */
export function runToEnd(command: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs: number }): Promise<ProcessRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const run: ProcessRun = { code: null, stdout: '', stderr: '', output: '' };
    for (const stream of ['stdout', 'stderr'] as const) {
      child[stream].setEncoding('utf8').on('data', (d: string) => {
        run[stream] += d;
        run.output += d;
      });
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ ...run, code });
    });
  });
}

/**
 * The repo's providers copied to a fresh temp dir with `files` (name → YAML text) written
 * beside them; returns the providers dir.
 */
export function providersWith(files: Record<string, string>): string {
  const dir = copyProviders(tempDir());
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** The opening lines of a test provider's YAML: its id, name, base URL and Bearer auth. */
export const providerHead = (id: string, name: string, baseUrl: string): string =>
  `id: ${id}\nname: ${name}\nbase_url: ${baseUrl}\nauth: { header: Authorization, format: "Bearer {key}" }\n`;

/** Where the simulator serves each provider the repo declares (its path prefix). */
const SIMULATOR_PREFIXES: Record<string, string> = {
  openai: '/openai/v1', groq: '/groq/openai/v1', deepseek: '/deepseek/v1', mistral: '/mistral/v1',
  anthropic: '/anthropic/v1', google: '/gemini/v1beta', elevenlabs: '/elevenlabs/v1', deepgram: '/deepgram/v1',
  xai: '/xai/v1', together: '/together/v1', fireworks: '/fireworks/inference/v1', openrouter: '/openrouter/api/v1',
  bedrock: '/bedrock', vertex: '/vertex/v1',
};

/** What a provider signed with aws-sigv4 gets instead of a key: the simulator's fixed test credentials. */
const SIMULATOR_AWS: Record<string, Record<string, string>> = {
  bedrock: { region: SIM_AWS.region, access_key_id: SIM_AWS.accessKeyId, secret_access_key: SIM_AWS.secretAccessKey },
};

/** Providers whose credentials are not a key (a Google service account): pointed at the simulator without one; a test that calls them configures its own (vertex-helpers.ts). */
const KEYLESS = new Set(['vertex']);

/** Provider ids declared by the YAML files of a providers folder. */
function declaredProviderIds(dir: string): string[] {
  return readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))
    .map((f) => /^id:\s*([a-z0-9-]+)/m.exec(readFileSync(join(dir, f), 'utf8'))?.[1])
    .filter((id): id is string => id !== undefined);
}

/** Every declared provider that the simulator speaks for, pointed at it with a key it accepts. */
export function simulatorOverrides(simUrl: string, providersDir = join(packageRoot(), 'providers')): Record<string, { base_url: string; api_key?: string; aws?: Record<string, string> }> {
  return Object.fromEntries(declaredProviderIds(providersDir).filter((id) => id in SIMULATOR_PREFIXES)
    .map((id) => [id, { base_url: simUrl + SIMULATOR_PREFIXES[id], ...(SIMULATOR_AWS[id] ? { aws: SIMULATOR_AWS[id] } : KEYLESS.has(id) ? {} : { api_key: 'sim-key' }) }]));
}

export interface TestGatewayOptions {
  /** Extra gateway.yaml content merged at the top level. */
  yaml?: Record<string, unknown>;
  providersDir?: string;
  /** Plugins loaded after the built-in ones gateway.yaml names. */
  extraPlugins?: GatewayPlugin[];
  now?: () => number;
  sim?: Simulator;
  /** Where the server log goes (set `yaml.log.level` too: the harness default is silent). */
  logStream?: NodeJS.WritableStream;
  /**
   * On the first `close()`, once the gateway has shut down (drained, log flushed, store
   * closed), open its database again and check every org's ledger (`expectLedgersExactAt`).
   * For files that start and close gateways of their own rather than the fixtures' (which
   * check before closing): checking after the shutdown never waits on a request in
   * flight, so it fits the tests that close a gateway under load.
   */
  checkLedgersAfterClose?: boolean;
}

export interface TestGateway {
  gateway: Gateway;
  config: GatewayConfig;
  url: string;
  sim: Simulator;
  dir: string;
  /** Creates an org with credits and returns it with a fresh key. */
  org(name: string, creditsUsd: string, retention?: Retention): Promise<{ org: Org; key: string }>;
  balance(orgId: string): Promise<number>;
  close(): Promise<void>;
}

/** A real listening gateway on an ephemeral port, on its own SQLite file, in front of the simulator. */
export async function startTestGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const dir = tempDir();
  const sim = opts.sim ?? (await startSimulator({ port: 0 }));
  const providersDir = opts.providersDir ?? join(packageRoot(), 'providers');
  const yaml = {
    server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 5000 },
    database: { url: `sqlite:${join(dir, 'gateway.db')}` },
    providers_dir: providersDir,
    log: { level: 'silent', flush_interval_ms: 20 },
    ...opts.yaml,
    providers: { ...simulatorOverrides(sim.url, providersDir), ...(opts.yaml?.providers as object | undefined) },
  };
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, JSON.stringify(yaml, null, 2)); // JSON is YAML
  const config = loadGatewayConfig(file, compileSchemas());
  const gateway = await createGateway({ config, plugins: selectPlugins(config, opts.extraPlugins), now: opts.now, logStream: opts.logStream });
  const url = await gateway.listen(0);
  let closed: Promise<void> | undefined;
  return {
    gateway, config, url, sim, dir,
    async org(name, creditsUsd, retention = 'standard') {
      const org = await createOrg(gateway.store, name, creditsUsd, retention);
      const { key } = await createKey(gateway.store, name);
      return { org, key };
    },
    async balance(orgId) {
      return (await gateway.store.getOrg(orgId))?.balanceMicros ?? Number.NaN;
    },
    close() {
      return (closed ??= (async () => {
        try {
          await gateway.close();
          if (!opts.sim) await sim.close();
          if (opts.checkLedgersAfterClose) await expectLedgersExactAt(config.database.url);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      })());
    },
  };
}

/** A test gateway with one org holding `creditsUsd`, its key, and the official openai client on /v1 with that key (no retries). */
export async function startOrgGateway(orgName: string, creditsUsd: string, opts: TestGatewayOptions = {}): Promise<{ t: TestGateway; key: string; orgId: string; client: OpenAI }> {
  const t = await startTestGateway(opts);
  const { org, key } = await t.org(orgName, creditsUsd);
  return { t, key, orgId: org.id, client: new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 }) };
}

/** The ledger equals the sum of logged costs for this org (after the batched log is written). */
export async function expectLedgerMatchesLog(t: TestGateway, orgId: string): Promise<void> {
  await t.gateway.log.flush();
  expect(await t.gateway.store.sumCharges(orgId)).toBe(await t.gateway.store.sumLoggedCosts(orgId));
}

/**
 * The teardown check of every gateway test file: for every org in the store, once the
 * requests in flight have ended (bounded wait) nothing is held, and the balance moved by
 * exactly the logged costs: credited − balance = Σ charges = Σ logged costs, to the µUSD.
 */
export async function expectEveryLedgerExact(t: Pick<TestGateway, 'gateway'>): Promise<void> {
  await expectStoreLedgersExact(t.gateway.store, () => t.gateway.log.flush());
}

/**
 * The same check on a database no gateway serves any more (one a test closed, the SQLite
 * file of a stopped CLI server, a stopped fleet's PostgreSQL schema): opened, audited, closed.
 */
export async function expectLedgersExactAt(databaseUrl: string): Promise<void> {
  const store = openStore(databaseUrl);
  try {
    await expectStoreLedgersExact(store, async () => undefined);
  } finally {
    await store.close();
  }
}

/** Every org of `store` balances; `flush` writes what its gateway still queues (the request log) before each read. */
async function expectStoreLedgersExact(store: Store, flush: () => Promise<void>): Promise<void> {
  for (const { org } of await store.tenancy.listOrgs(null)) {
    let audit = await store.audit(org.id);
    for (let i = 0; i < 100 && audit.held !== 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      await flush();
      audit = await store.audit(org.id);
    }
    await flush();
    audit = await store.audit(org.id);
    expect({ org: org.name, ...audit }).toEqual({ org: org.name, ...audit, held: 0, charged: audit.logged, balance: audit.credited - audit.logged });
  }
}

/** The request-log row of a request, once the batched writer has flushed it (bounded wait). */
export async function logRow(t: TestGateway, requestId: string): Promise<LogRow> {
  for (let i = 0; i < 100; i++) {
    await t.gateway.log.flush();
    const row = await t.gateway.store.getLog(requestId);
    if (row) return row;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no log row for ${requestId}`);
}

/** POSTs JSON to the gateway and returns status, headers and parsed body. */
export async function postJson(url: string, body: unknown, key?: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** One maintenance task's run among everything the gateway's `runTasks` ran (other plugins add their own). */
export async function runTask(t: Pick<TestGateway, 'gateway'>, name: string): Promise<{ task: string; result: string } | undefined> {
  return (await t.gateway.runTasks()).find((r) => r.task === name);
}
