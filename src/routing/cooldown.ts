import type { Redis } from 'ioredis';
import type { Deployment, DeploymentState } from '../model/routing.js';

/** Why a deployment was taken out of rotation (a label of `tollgate_deployment_cooldowns_total`). */
export type CooldownReason = '429' | '5xx' | 'timeout' | 'connect_error' | 'key_rejected';

interface Entry {
  /** Back in rotation at this time (ms since epoch); Infinity: rejected until the config changes. */
  until: number;
  reason: CooldownReason;
}

/** How long Redis keeps a rejection (the config changing gives the deployment a new fingerprint, so a new key). */
const REJECTED_TTL_MS = 24 * 3_600_000;
/** The longest `start` waits for Redis (the invalidation bus waits as long). */
const START_WAIT_MS = 2500;

export interface CooldownOptions {
  now: () => number;
  /** The gateway's Redis client: cooldowns are shared by every instance on it. Absent: per process. */
  redis?: Redis | undefined;
  /** `redis.key_prefix`: keys `<prefix>routing:cooldown:<provider>/<name>#<fingerprint>`, channel `<prefix>routing:cooldown`. */
  keyPrefix?: string;
  /** A Redis call that failed: the cooldown still holds on this instance. */
  onError?: (err: unknown, what: string) => void;
  /** How long `start` waits for Redis to answer before serving without the shared cooldowns (joined later, on `ready`). */
  startWaitMs?: number;
}

/**
 * Which deployments are out of rotation, and until when. Reads are in memory (every
 * request reads them); a cooldown set here is written to Redis with its expiry and
 * published, so every instance holds it within the publish's latency (milliseconds);
 * an instance that starts, or whose subscription comes back, reads the keys that exist.
 */
export class CooldownBook {
  private readonly entries = new Map<string, Entry>();
  private subscriber: Redis | undefined;
  private readonly channel: string;
  private readonly prefix: string;

  constructor(private readonly opts: CooldownOptions) {
    this.prefix = `${opts.keyPrefix ?? 'tollgate:'}routing:cooldown`;
    this.channel = this.prefix;
  }

  state(d: Deployment): DeploymentState {
    const e = this.live(d);
    if (!e) return 'healthy';
    return e.until === Infinity ? 'rejected' : 'cooling';
  }

  /** When the deployment is back (ms since epoch): undefined when healthy, Infinity when rejected. */
  until(d: Deployment): number | undefined {
    return this.live(d)?.until;
  }

  reason(d: Deployment): CooldownReason | undefined {
    return this.live(d)?.reason;
  }

  /** Takes `d` out for `ms` (a later end already set wins). */
  cool(d: Deployment, ms: number, reason: CooldownReason): void {
    const until = this.opts.now() + ms;
    const current = this.entries.get(keyOf(d));
    if (current && current.until >= until) return;
    this.entries.set(keyOf(d), { until, reason });
    this.share(d, until, reason, ms);
  }

  /** The provider refused `d`'s key: out until the config gives it another key (or URL). */
  reject(d: Deployment): void {
    this.entries.set(keyOf(d), { until: Infinity, reason: 'key_rejected' });
    this.share(d, Infinity, 'key_rejected', REJECTED_TTL_MS);
  }

  /** Subscribes to the other instances' cooldowns and reads those already set. Resolves even when Redis is down (it catches up on `ready`). */
  async start(): Promise<void> {
    const redis = this.opts.redis;
    if (!redis) return;
    const sub = redis.duplicate({ maxRetriesPerRequest: null, lazyConnect: true });
    this.subscriber = sub;
    sub.on('error', () => undefined);
    sub.on('message', (_channel: string, message: string) => this.received(message));
    // Every (re)connection: subscribe (a no-op when ioredis already resubscribed) and read what was set meanwhile.
    const join = async (): Promise<void> => {
      try {
        await sub.subscribe(this.channel);
        await this.load();
      } catch (err) {
        this.opts.onError?.(err, 'subscribing to shared cooldowns');
      }
    };
    sub.on('ready', () => void join());
    const joined = sub.connect().then(join, (err: unknown) => {
      // Redis down at boot: ioredis keeps reconnecting, and `ready` joins then.
      if (this.subscriber === sub) this.opts.onError?.(err, 'connecting to Redis for shared cooldowns');
    });
    // A Redis that accepts connections and never answers leaves connect() pending: the start waits
    // for it at most this long (it joins on `ready` if that ever comes), as the invalidation bus does.
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.opts.startWaitMs ?? START_WAIT_MS);
      timer.unref();
    });
    await Promise.race([joined, bound]);
    clearTimeout(timer);
  }

  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private live(d: Deployment): Entry | undefined {
    const key = keyOf(d);
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until > this.opts.now()) return e;
    this.entries.delete(key);
    return undefined;
  }

  private share(d: Deployment, until: number, reason: CooldownReason, ttlMs: number): void {
    const redis = this.opts.redis;
    if (!redis) return;
    const value = JSON.stringify({ k: keyOf(d), until: until === Infinity ? -1 : until, reason });
    redis.multi().set(`${this.prefix}:${keyOf(d)}`, value, 'PX', Math.max(1, Math.ceil(ttlMs))).publish(this.channel, value).exec()
      .catch((err: unknown) => this.opts.onError?.(err, 'sharing a cooldown'));
  }

  private received(message: string): void {
    let parsed: { k?: unknown; until?: unknown; reason?: unknown };
    try {
      parsed = JSON.parse(message) as typeof parsed;
    } catch {
      return;
    }
    const { k, until, reason } = parsed;
    if (typeof k !== 'string' || typeof until !== 'number' || typeof reason !== 'string') return;
    const end = until === -1 ? Infinity : until;
    const current = this.entries.get(k);
    if (current && current.until >= end) return;
    this.entries.set(k, { until: end, reason: reason as CooldownReason });
  }

  /** Every cooldown already in Redis (at start, and after the subscription came back: what was published meanwhile). */
  private async load(): Promise<void> {
    const redis = this.opts.redis;
    if (!redis) return;
    try {
      let cursor = '0';
      let rounds = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${this.prefix}:*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) for (const v of await redis.mget(...keys)) if (v) this.received(v);
      } while (cursor !== '0' && ++rounds < 1000);
    } catch (err) {
      this.opts.onError?.(err, 'reading shared cooldowns');
    }
  }
}

const keyOf = (d: Deployment): string => `${d.id}#${d.fingerprint}`;

/**
 * How long a provider asks to be left alone (`Retry-After`: seconds or an HTTP date;
 * `retry-after-ms` wins when sent), capped at an hour; undefined when it says nothing usable.
 */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>, now: number): number | undefined {
  const first = (name: string): string | undefined => {
    const v = headers[name];
    return (Array.isArray(v) ? v[0] : v)?.trim();
  };
  const ms = first('retry-after-ms');
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.min(Number(ms), MAX_RETRY_AFTER_MS);
  const value = first('retry-after');
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(at - now, 0), MAX_RETRY_AFTER_MS);
}

const MAX_RETRY_AFTER_MS = 3_600_000;
