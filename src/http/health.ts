import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { GatewayError } from '../lib/errors.js';
import { packageVersion } from '../lib/paths.js';
import type { Store } from '../store/types.js';

interface PartHealth { connected: boolean; error: string; configured?: boolean; skipped?: boolean }

export interface HealthRecord {
  message: string;
  version: string;
  health: { status: 'ok' | 'error'; redis: PartHealth; database: PartHealth };
}

const CHECKS = ['redis', 'database'] as const;
const CHECK_TIMEOUT_MS = 2000;

/**
 * `GET /` (spec §2.4, §4.8): checks the database and Redis, unless `skip` names
 * them. 200 with status "ok", or 503 with status "error" and the failing part named
 * in `message`. Redis that is not configured is reported as such, not as a failure.
 * The health check needs no key: load balancers call it.
 */
export function registerHealthRoute(app: FastifyInstance, deps: { store: Store; redis: Redis | undefined }): void {
  const version = packageVersion();
  app.get<{ Querystring: { skip?: string } }>('/', async (request, reply) => {
    const skip = new Set((request.query.skip ?? '').split(',').map((s) => s.trim()).filter(Boolean));
    const unknown = [...skip].filter((s) => !(CHECKS as readonly string[]).includes(s));
    if (unknown.length > 0) throw new GatewayError('invalid_request', [`skip accepts ${CHECKS.join(', ')}; got ${unknown.join(', ')}`], { param: 'skip' });
    const [redis, database] = await Promise.all([
      skip.has('redis') ? skipped() : checkRedis(deps.redis),
      skip.has('database') ? skipped() : check(() => deps.store.ping()),
    ]);
    const failing = [redis.configured === false ? undefined : redis.connected || redis.skipped ? undefined : 'redis',
      database.connected || database.skipped ? undefined : 'database'].filter((x): x is string => x !== undefined);
    const record: HealthRecord = {
      message: failing.length === 0 ? 'Tollgate is running' : `Tollgate is unhealthy: ${failing.join(', ')} failing`,
      version,
      health: { status: failing.length === 0 ? 'ok' : 'error', redis, database },
    };
    void reply.code(failing.length === 0 ? 200 : 503).header('cache-control', 'no-store');
    return record;
  });
}

function skipped(): Promise<PartHealth> {
  return Promise.resolve({ connected: false, error: '', skipped: true });
}

async function checkRedis(redis: Redis | undefined): Promise<PartHealth> {
  if (!redis) return { connected: false, error: '', configured: false };
  return check(async () => {
    await redis.ping();
  });
}

async function check(ping: () => Promise<void>): Promise<PartHealth> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { connected: true, error: '' };
  } catch (err) {
    return { connected: false, error: (err as Error).message || String(err) };
  } finally {
    clearTimeout(timer);
  }
}
