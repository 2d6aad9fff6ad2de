import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { packageRoot } from '../src/lib/paths.js';
import { openStore } from '../src/store/index.js';
import { createOrg } from '../src/tenancy/admin.js';
import { expectLedgersExactAt, simulatorOverrides, tempDir } from './harness.js';

/** Helpers for the end-to-end tests of the real `bin/gateway.js`, spawned as child processes. */

export const ROOT = packageRoot();
export const BIN = join(ROOT, 'bin', 'gateway.js');
const STAMP = join(ROOT, 'dist', '.cli-test-build-stamp');
const LOCK = join(tmpdir(), `tollgate-cli-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.lock`);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A hash of everything the TypeScript build compiles, so that parallel test files build dist/ once per source change. */
function sourceHash(): string {
  const h = createHash('sha256');
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) h.update(p).update(readFileSync(p));
    }
  };
  for (const d of ['src', 'plugins', 'simulator', 'cli']) walk(join(ROOT, d));
  for (const f of ['tsconfig.json', 'tsconfig.build.json']) h.update(readFileSync(join(ROOT, f)));
  return h.digest('hex');
}

/**
 * Compiles the TypeScript sources into dist/ (`tsc -p tsconfig.build.json`, the first half
 * of `npm run build`) unless dist/ was already built from these exact sources. Not the whole
 * `npm run build`: it empties dist/ first, and dist/console would vanish under the browser
 * test running beside this file (that test builds the console bundle itself). A lock
 * directory keeps two test files from running tsc over dist/ at once (a spawned CLI
 * would otherwise import half-written files).
 */
export async function buildOnce(): Promise<void> {
  const hash = sourceHash();
  const fresh = (): boolean => existsSync(STAMP) && readFileSync(STAMP, 'utf8') === hash;
  for (let i = 0; i < 240; i++) {
    if (fresh()) return;
    try {
      mkdirSync(LOCK);
    } catch {
      const held = statSync(LOCK, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 120_000) rmSync(LOCK, { recursive: true, force: true }); // a crashed run's lock
      await sleep(500);
      continue;
    }
    try {
      if (fresh()) return;
      const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8', timeout: 110_000 });
      if (r.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
      writeFileSync(STAMP, hash);
      return;
    } finally {
      rmSync(LOCK, { recursive: true, force: true });
    }
  }
  throw new Error(`gave up waiting for the build lock ${LOCK}`);
}

const live = new Set<ChildProcess>();

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

function spawnCli(args: string[], env: NodeJS.ProcessEnv, input?: string): ChildProcess {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (input !== undefined) child.stdin!.end(input);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** SIGKILLs every CLI process still running (afterEach/afterAll), and waits for them to go. */
export async function killAll(): Promise<void> {
  const children = [...live];
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map((c) => Promise.race([exitOf(c), sleep(5000)])));
}

/** Stops every CLI process still running as an operator does (SIGTERM; SIGKILL after 15 s) and waits for them to go. */
async function stopAll(): Promise<void> {
  await Promise.all([...live].map(async (c) => {
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 15_000);
    await exitOf(c);
    clearTimeout(timer);
  }));
}

/**
 * The ledger check of the files that run the real CLI (what the fixtures check in-process):
 * once every CLI process has stopped (`stopAll`), every org of each database balances
 * (`expectLedgersExactAt`). A SQLite file that no server ever created is skipped.
 */
export async function stopAndCheckLedgers(...databaseUrls: string[]): Promise<void> {
  await stopAll();
  for (const url of databaseUrls) {
    if (url.startsWith('sqlite:') && !existsSync(url.slice('sqlite:'.length))) continue;
    await expectLedgersExactAt(url);
  }
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/gateway.js ...args` to completion (killed after `timeoutMs`). */
export async function cli(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<CliResult> {
  const child = spawnCli(args, opts.env ?? process.env, opts.input);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 15_000);
  const closed = new Promise<void>((r) => child.once('close', () => r()));
  const { code, signal } = await exitOf(child);
  await closed;
  clearTimeout(timer);
  return { code, signal, stdout, stderr };
}

/** No stack frame (`    at fn (file:line)`) in a CLI's output. */
export const STACK_FRAME = /^\s+at\s/m;

export interface Server {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `gateway serve --config FILE --port 0 [...args]` and waits for its "listening on" line (a bound for a hung start, not a speed check: a loaded 2-core machine has taken over 15 s). */
export async function serve(config: string, timeoutMs = 60_000, args: string[] = [], env: NodeJS.ProcessEnv = process.env): Promise<Server> {
  const child = spawnCli(['serve', '--config', config, '--port', '0', ...args], env);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = exitOf(child);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = /^Tollgate \S+ listening on (http:\/\/127\.0\.0\.1:\d+) /m.exec(out);
    if (m?.[1]) return { child, url: m[1], stdout: () => out, stderr: () => err, exited };
    if (child.exitCode !== null || child.signalCode !== null) break;
    await sleep(25);
  }
  child.kill('SIGKILL');
  throw new Error(`serve did not start listening:\nstdout: ${out}\nstderr: ${err}`);
}

/** Writes `<dir>/gateway.yaml` for a gateway on `<dir>/g.db` in front of the simulator; returns its path. */
export function writeConfig(dir: string, simUrl: string, extra: Record<string, unknown> = {}): string {
  const file = join(dir, 'gateway.yaml');
  const yaml = {
    server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 10_000 },
    database: { url: `sqlite:${join(dir, 'g.db')}` },
    providers_dir: join(ROOT, 'providers'),
    providers: simulatorOverrides(simUrl),
    log: { level: 'silent', flush_interval_ms: 50 },
    ...extra,
  };
  writeFileSync(file, JSON.stringify(yaml, null, 2)); // JSON is YAML
  return file;
}

/** Runs one query on the SQLite file read-only (as an operator would inspect it). */
export function query<T>(dbFile: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** These columns of the `default` project (of useCliServer's one org) in the SQLite file, read as an operator would. */
export function defaultProject(dbFile: string, ...columns: string[]): Record<string, unknown> | undefined {
  return query<Record<string, unknown>>(dbFile, `SELECT ${columns.join(', ')} FROM projects WHERE name = 'default'`)[0];
}

/** The key printed alone on the last line of `keys create`. */
export function lastLine(text: string): string {
  const lines = text.trimEnd().split('\n');
  return lines[lines.length - 1] ?? '';
}

export const KEY = /^tg_[A-Za-z0-9]{40}$/;

/** A chat completion request to the gateway through fetch, as any HTTP client would send it. */
export async function chat(url: string, key: string, content = 'Hello'): Promise<{ status: number; requestId: string | null; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
  return { status: res.status, requestId: res.headers.get('x-request-id'), body: (await res.json()) as Record<string, unknown> };
}

export { sleep };

export interface CliConfig {
  sim: Simulator;
  dir: string;
  config: string;
  db: string;
}

/**
 * For a test file of the real binary: the build, a simulator for the file, and a temp dir
 * with a config on `g.db` in it — one for the whole file, or with `eachTest` a fresh one per
 * test whose ledgers are checked (`stopAndCheckLedgers`) after it. Every spawned process is
 * killed after each test; all is gone after the file. Read the fields inside tests and hooks.
 */
export function useCliConfig(prefix: string, opts: { eachTest?: boolean } = {}): CliConfig {
  const env = {} as CliConfig;
  const fresh = (): void => {
    env.dir = tempDir(prefix);
    env.config = writeConfig(env.dir, env.sim.url);
    env.db = join(env.dir, 'g.db');
  };
  beforeAll(async () => {
    await buildOnce();
    env.sim = await startSimulator({ port: 0 });
    if (!opts.eachTest) fresh();
  }, 120_000);
  if (opts.eachTest) {
    beforeEach(fresh);
    afterEach(async () => {
      try {
        await stopAndCheckLedgers(`sqlite:${env.db}`);
      } finally {
        await killAll();
        rmSync(env.dir, { recursive: true, force: true });
      }
    }, 30_000);
  } else afterEach(killAll);
  afterAll(async () => {
    await killAll();
    await env.sim?.close();
    if (!opts.eachTest && env.dir) rmSync(env.dir, { recursive: true, force: true });
  });
  return env;
}

export interface CliServer {
  sim: Simulator;
  dir: string;
  config: string;
  db: string;
  server: Server;
}

/**
 * For a test file of CLI commands beside a running server: a simulator, a config on a
 * fresh SQLite file with an org `acme` holding $5, and `gateway serve` on it; all gone
 * after the file, once its ledgers are checked (`stopAndCheckLedgers`). Read the fields
 * inside tests and hooks.
 */
export function useCliServer(prefix: string): CliServer {
  const env = {} as CliServer;
  beforeAll(async () => {
    await buildOnce();
    env.sim = await startSimulator({ port: 0 });
    env.dir = tempDir(prefix);
    env.config = writeConfig(env.dir, env.sim.url);
    env.db = join(env.dir, 'g.db');
    // The org through the admin service `orgs create` calls, in this process: one Node start
    // less per file (that command's own output and audit row are cli-admin's and cli-audit's).
    const store = openStore(`sqlite:${env.db}`);
    try {
      await createOrg(store, 'acme', '5', 'standard');
    } finally {
      await store.close();
    }
    env.server = await serve(env.config);
  }, 120_000);
  afterAll(async () => {
    try {
      if (env.db) await stopAndCheckLedgers(`sqlite:${env.db}`);
    } finally {
      await killAll();
      await env.sim?.close();
      if (env.dir) rmSync(env.dir, { recursive: true, force: true });
    }
  }, 30_000);
  return env;
}
