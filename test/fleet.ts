import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { freePort } from '../src/lib/ports.testkit.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export { pgQuery, sharedPostgresSchema } from '../src/store/drivers.testkit.js';
import { buildOnce, serve, sleep, writeConfig, type Server } from './cli-helpers.js';

/*
 * Several real gateway processes on one PostgreSQL (+ Redis), for the promises that are
 * about many instances: limits, revocation, crash recovery, the sweep. Each instance is
 * `node bin/gateway.js serve` on its own loopback port; a test may SIGKILL one. When a
 * test must stop or restart the database or Redis, it starts a private one here (never
 * the machine's shared servers, which other test files use at the same time).
 */

export { freePort } from '../src/lib/ports.testkit.js';

function pgBin(tool: string): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return join('/usr/lib/postgresql', versions[0], 'bin', tool);
}

function asPostgres(args: string[]): void {
  const [cmd, ...rest] = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...args] : args;
  const r = spawnSync(cmd!, rest, { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
}

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  url: string;
  /** `pg_ctl restart -m fast`: every connection is cut, the server is back when this resolves. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A PostgreSQL cluster of its own (initdb in a temp folder, trust auth, loopback, fsync off). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-'));
  if (process.getuid?.() === 0) {
    const pw = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    chownSync(dir, Number(pw.stdout.trim()), Number(gid.stdout.trim()));
  }
  const data = join(dir, 'data');
  asPostgres([pgBin('initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200`;
  const ctl = (...args: string[]): void => asPostgres([pgBin('pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-w', '-o', opts, ...args]);
  ctl('start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => ctl('restart', '-m', 'fast'),
    stop: async () => {
      try {
        ctl('stop', '-m', 'immediate');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export interface PrivateRedis {
  url: string;
  /** SIGKILL the server (clients see connection errors until `start()`). */
  kill(): Promise<void>;
  /** (Re)start it on the same port. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A redis-server of its own on a free loopback port, nothing persisted. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      const r = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
      if (r.stdout.trim() === 'PONG') return;
      await sleep(50);
    }
    throw new Error(`redis-server on port ${port} did not answer`);
  };
  const kill = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, kill, start, stop: kill };
}

export interface FleetOptions {
  /** How many gateway processes. */
  n: number;
  /** A folder for the config (and anything else the test keeps). */
  dir: string;
  simUrl: string;
  databaseUrl: string;
  redisUrl?: string;
  /** Extra gateway.yaml content merged at the top level. */
  yaml?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}

export interface Fleet {
  config: string;
  instances: Server[];
  urls(): string[];
  /** SIGKILL instance i and wait for it to be gone. */
  kill(i: number): Promise<void>;
  /** Start instance i again (after `kill`) on a new port. */
  restart(i: number): Promise<Server>;
  /** SIGTERM every instance still running and wait for each to exit. */
  stop(): Promise<void>;
}

/**
 * Starts `n` gateway processes sharing one database (and Redis). The first is started
 * alone, so that it runs the migrations; the rest in parallel. Builds dist/ first when
 * the sources changed.
 */
export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  await buildOnce();
  const config = writeConfig(opts.dir, opts.simUrl, {
    database: { url: opts.databaseUrl },
    ...(opts.redisUrl ? { redis: { url: opts.redisUrl } } : {}),
    ...opts.yaml,
  });
  const env = { ...process.env, TOLLGATE_SECRET_KEY: randomBytes(32).toString('base64'), ...opts.env };
  const start = (): Promise<Server> => serve(config, 30_000, [], env);
  const instances: Server[] = [await start()];
  instances.push(...(await Promise.all(Array.from({ length: opts.n - 1 }, start))));
  const alive = (s: Server): boolean => s.child.exitCode === null && s.child.signalCode === null;
  return {
    config,
    instances,
    urls: () => instances.map((s) => s.url),
    async kill(i) {
      const s = instances[i]!;
      if (alive(s)) s.child.kill('SIGKILL');
      await s.exited;
    },
    async restart(i) {
      instances[i] = await start();
      return instances[i]!;
    },
    async stop() {
      await Promise.all(instances.map(async (s) => {
        if (alive(s)) s.child.kill('SIGTERM');
        const timer = setTimeout(() => s.child.kill('SIGKILL'), 15_000);
        await s.exited;
        clearTimeout(timer);
      }));
    },
  };
}

/**
 * Runs `total` calls of `fn(url, i)` round-robin over `urls`, at most `concurrency` at a
 * time; returns each call's result in order. Bounded by construction.
 */
export async function roundRobin<T>(urls: readonly string[], total: number, concurrency: number, fn: (url: string, i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(total);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < total; i = next++) results[i] = await fn(urls[i % urls.length]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return results;
}
