// The gateway configurations of the traffic scenarios (issue 18: the hot path is measured
// with limits and metrics on, as in production, and the cost of each is shown apart).
//
// - `gateway`: production — the Prometheus listener on, and every limit kind on the key
//   (rpm, tpm, concurrency and a monthly budget, all far above what the load reaches), counted
//   on Redis when one answers at TOLLGATE_BENCH_REDIS_URL (default redis://127.0.0.1:6379),
//   in process otherwise (the report says which).
// - with `--costs`, also `metrics` (the listener on, no limits) and `plain` (neither): the
//   embedded defaults of a first `npm start`.
import { connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.TOLLGATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** This run's Redis keys (limits counters, the sign-in throttle) start with it; they are deleted at the end. */
export const REDIS_PREFIX = `tollgate-bench-${process.pid}:`;

/** The key's limits in the production configuration: each is checked and counted on every request, none is reached. */
export const LIMIT_FLAGS = ['--rpm', '100000000', '--tpm', '1000000000000', '--max-concurrent', '100000', '--budget-usd', '1000000', '--budget-period', 'month'];

/** True when a Redis server answers PING at `url` within a second. */
export function redisAnswers(url = REDIS_URL) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

/**
 * Writes the config file of each gateway variant (its own SQLite file: one gateway process
 * owns a SQLite ledger) and returns [{ name, file, limitFlags, describe }], production first.
 */
export function gatewayVariants({ tmp, base, redis, costs }) {
  const write = (name, extra) => {
    const file = join(tmp, `gateway-${name}.yaml`);
    writeFileSync(file, JSON.stringify({ ...base, database: { url: `sqlite:${join(tmp, `gateway-${name}.db`)}` }, ...extra }, null, 2)); // JSON is YAML
    return file;
  };
  const metrics = { metrics: { host: '127.0.0.1', port: 0 } };
  const where = redis ? `on Redis (${REDIS_URL}, its own key prefix)` : 'in process (no Redis answered)';
  const variants = [{
    name: 'gateway', limitFlags: LIMIT_FLAGS, describe: `production: metrics listener on, rpm + tpm + concurrency + monthly budget on the key, counted ${where}`,
    file: write('production', { ...metrics, ...(redis ? { redis: { url: REDIS_URL, key_prefix: REDIS_PREFIX } } : {}) }),
  }];
  if (costs) {
    variants.push({ name: 'metrics', limitFlags: [], describe: 'metrics listener on, no limits', file: write('metrics', metrics) });
    variants.push({ name: 'plain', limitFlags: [], describe: 'the embedded defaults: no metrics, no limits', file: write('plain', {}) });
  }
  return variants;
}

/** Deletes this run's keys from Redis (SCAN, never KEYS: the server may be shared); a Redis that does not answer is left alone. */
export async function forgetRedisKeys() {
  if (!(await redisAnswers())) return;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    await deletePrefix(redis, REDIS_PREFIX);
  } finally {
    redis.disconnect();
  }
}

/** Deletes every key under `prefix` (SCAN, never KEYS, on a server that may be shared). */
export async function deletePrefix(redis, prefix) {
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 })) {
    if (keys.length) await redis.del(...keys);
  }
}
