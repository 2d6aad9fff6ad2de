import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisLimiter, type RedisLimiterOptions } from './redis.js';
import { freePort } from '../lib/ports.testkit.js';
import type { RedisBatch, RedisLike } from '../lib/redis-runner.js';

/** The shared Redis of the test machines; tests touch it only under a random key prefix. */
export const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other run uses. */
export function testPrefix(): string {
  return `tollgate-test:limits:${process.pid}:${randomBytes(4).toString('hex')}:`;
}

/** Deletes every key under a prefix (SCAN, never KEYS, on a shared server). */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** Counts the scripts a limiter sends (and the pipelines that carry several), passing every call through to the real client. */
export class CountingRedis implements RedisLike {
  calls = 0;
  pipelines = 0;
  readyWaits = 0;
  constructor(private readonly redis: Redis) {}
  pipeline(): RedisBatch {
    const batch = this.redis.pipeline();
    return {
      evalsha: (sha, numKeys, ...args) => {
        this.calls++;
        return batch.evalsha(sha, numKeys, ...args);
      },
      exec: () => {
        this.pipelines++;
        return batch.exec();
      },
    };
  }
  get status(): string {
    return this.redis.status;
  }
  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    this.calls++;
    return this.redis.evalsha(sha, numKeys, ...args);
  }
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    this.calls++;
    return this.redis.eval(script, numKeys, ...args);
  }
  once(event: 'ready', listener: () => void): this {
    this.readyWaits++;
    this.redis.once(event, listener);
    return this;
  }
  removeListener(event: 'ready', listener: () => void): this {
    this.redis.removeListener(event, listener);
    return this;
  }
}

export function client(url: string, options: RedisOptions = {}): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, ...options });
  redis.on('error', () => undefined); // a test that stops Redis expects these
  return redis;
}

/** A redis-server of the test's own on an ephemeral port, keeping nothing on disk, to kill and restart. */
export class OwnRedis {
  private child: ChildProcess | undefined;
  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedis> {
    const own = new OwnRedis(await freePort());
    await own.restart();
    return own;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, empty) on the same port and waits until it answers PING. */
  async restart(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    this.child = child;
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      for (let attempt = 0; attempt < 100; attempt++) {
        if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
        try {
          await probe.connect();
          if ((await probe.ping()) === 'PONG') return;
        } catch {
          probe.disconnect();
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      throw new Error(`redis-server did not answer on port ${this.port}`);
    } finally {
      probe.disconnect();
    }
  }

  /** SIGKILL: the server and everything in it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGSTOP / SIGCONT: the server keeps its connections but stops answering (a hang, not a refusal). */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }
}

export interface RedisLimiterPool {
  /** The fresh key prefix every limiter of the pool writes under. */
  prefix: string;
  /** Every client the pool will close after the suite (a test may add its own). */
  clients: Redis[];
  /** A client for direct reads and writes, opened in beforeAll. */
  admin: Redis;
  /** A limiter on a client of its own, as one instance of a fleet. */
  instance(opts?: Partial<RedisLimiterOptions>): RedisLimiter;
}

/** Limiters on the shared Redis under one fresh prefix; after the suite the prefix is deleted and every client closed. */
export function redisLimiterPool(defaults: Partial<RedisLimiterOptions> = {}): RedisLimiterPool {
  const pool: RedisLimiterPool = {
    prefix: testPrefix(),
    clients: [],
    admin: undefined as unknown as Redis,
    instance(opts = {}) {
      const redis = client(REDIS_URL);
      pool.clients.push(redis);
      return new RedisLimiter({ redis, seed: async () => 0, keyPrefix: pool.prefix, ...defaults, ...opts });
    },
  };
  beforeAll(() => {
    pool.admin = client(REDIS_URL);
  });
  afterAll(async () => {
    await deletePrefix(pool.admin, pool.prefix);
    await Promise.all([...pool.clients, pool.admin].map((c) => c.quit()));
  });
  return pool;
}
