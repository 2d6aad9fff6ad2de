import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Client as PgClient } from 'pg';
import type { Redis } from 'ioredis';
import { DEFAULT_REDIS_KEY_PREFIX } from '../config/gateway-config.js';

/*
 * Pushed cache invalidation. Each instance caches API keys, provider keys (and limits)
 * for a short TTL; a change made anywhere — the management API on any instance, or the
 * CLI, a separate process — is broadcast so every instance evicts the entry at once:
 *
 * - Redis pub/sub on one channel when `redis.url` is set (named after `redis.key_prefix`);
 * - PostgreSQL LISTEN/NOTIFY on PostgreSQL without Redis (one channel per schema);
 * - in-process only otherwise (SQLite: one server, the CLI's changes wait for the TTL).
 *
 * A subscription that drops is re-established with backoff; once it is back, every
 * cache is cleared (`id` null), since messages sent meanwhile were lost. The TTL stays
 * as the fallback for whatever the push misses.
 */

/** What a cached entry is keyed by: `api_key` → key prefix (`tg_` + 8), `provider_key` → org id, `limits` → the limits' scope id. */
export type InvalidationKind = 'api_key' | 'provider_key' | 'limits';
const INVALIDATION_KINDS: readonly InvalidationKind[] = ['api_key', 'provider_key', 'limits'];

/** Evicts one id, or (null) every id of the kind: the subscription was down and may have missed some. */
export type InvalidationHandler = (id: string | null) => void;

/** The publishing side: what the management API and the CLI call after a change has committed. */
export interface Invalidator {
  /**
   * Evicts the entry in this process at once, then broadcasts it. Resolves true once
   * the broadcast is acknowledged (Redis answered PUBLISH, NOTIFY committed), false
   * when there is no broadcast or it failed (reported to `onError`). Never rejects:
   * the change itself is already committed, and the TTL still applies.
   */
  invalidate(kind: InvalidationKind, id: string): Promise<boolean>;
}

export interface InvalidationBus extends Invalidator {
  /** How changes reach the other processes. */
  readonly transport: 'redis' | 'postgres' | 'local';
  /** Calls `handler` for each invalidation of `kind` (from this process or another); returns the unsubscribe. */
  on(kind: InvalidationKind, handler: InvalidationHandler): () => void;
  /** Subscribes (servers only); resolves after the first attempt, retrying in the background if it failed. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface InvalidationOptions {
  databaseUrl: string;
  redisUrl?: string | undefined;
  /** `redis.key_prefix`: the channel is `<prefix>invalidate` (default `tollgate:invalidate`). */
  redisKeyPrefix?: string | undefined;
  /** A connected client to PUBLISH on (the gateway's own); else one is opened on first use. */
  redis?: Redis | undefined;
  /** A publish or subscription failure (the caches then rely on their TTL). */
  onError?: (err: Error, what: string) => void;
  /** Reconnect backoff bounds (tests shorten them). */
  retryMinMs?: number;
  retryMaxMs?: number;
}

/**
 * The Redis channel of a key prefix: deployments sharing one Redis under different
 * prefixes do not hear each other's changes (with one prefix they would only cost each
 * other an extra read, the ids being random).
 */
export function redisChannel(keyPrefix: string = DEFAULT_REDIS_KEY_PREFIX): string {
  return `${keyPrefix}invalidate`;
}

/** The NOTIFY channel of a database url: one per schema, since NOTIFY reaches the whole database. */
export function postgresChannel(databaseUrl: string): string {
  const schema = new URL(databaseUrl).searchParams.get('schema');
  return schema ? `tollgate_invalidate_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}` : 'tollgate_invalidate';
}

const encode = (kind: InvalidationKind, id: string): string => `${kind}:${id}`;

function decode(message: string): { kind: InvalidationKind; id: string } | undefined {
  const i = message.indexOf(':');
  const kind = message.slice(0, i) as InvalidationKind;
  if (i <= 0 || !INVALIDATION_KINDS.includes(kind) || i === message.length - 1) return undefined;
  return { kind, id: message.slice(i + 1) };
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/** The bus for a config: Redis when set, else PostgreSQL's NOTIFY on a postgres:// database, else local. */
export function createInvalidationBus(opts: InvalidationOptions): InvalidationBus {
  if (opts.redisUrl) return new RedisBus(opts.redisUrl, opts);
  if (/^postgres(ql)?:\/\//.test(opts.databaseUrl)) return new PostgresBus(opts.databaseUrl, opts);
  return new LocalBus(opts);
}

/** Handlers and local eviction, shared by every transport. */
class LocalBus implements InvalidationBus {
  readonly transport: InvalidationBus['transport'] = 'local';
  private readonly handlers = new Map<InvalidationKind, Set<InvalidationHandler>>();

  constructor(protected readonly opts: InvalidationOptions) {}

  on(kind: InvalidationKind, handler: InvalidationHandler): () => void {
    let set = this.handlers.get(kind);
    if (!set) this.handlers.set(kind, (set = new Set()));
    set.add(handler);
    return () => void set.delete(handler);
  }

  async invalidate(kind: InvalidationKind, id: string): Promise<boolean> {
    this.deliver(kind, id);
    try {
      return await this.publish(encode(kind, id));
    } catch (err) {
      this.opts.onError?.(asError(err), `broadcasting the ${kind} change`);
      return false;
    }
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {}

  /** Sends to the other processes; true once acknowledged. */
  protected async publish(_message: string): Promise<boolean> {
    return false;
  }

  protected deliver(kind: InvalidationKind, id: string | null): void {
    for (const h of this.handlers.get(kind) ?? []) h(id);
  }

  protected received(message: string): void {
    const m = decode(message);
    if (m) this.deliver(m.kind, m.id);
  }

  /** After (re)subscribing: anything published while unsubscribed was missed, so every cache starts over. */
  protected resubscribed(): void {
    for (const kind of INVALIDATION_KINDS) this.deliver(kind, null);
  }

  protected backoff(attempt: number): number {
    return Math.min((this.opts.retryMinMs ?? 200) * 2 ** Math.min(attempt, 10), this.opts.retryMaxMs ?? 5000);
  }
}

class RedisBus extends LocalBus {
  override readonly transport = 'redis';
  private publisher: Redis | undefined;
  private subscriber: Redis | undefined;
  private closing = false;
  private readonly channel: string;

  constructor(private readonly url: string, opts: InvalidationOptions) {
    super(opts);
    this.publisher = opts.redis;
    this.channel = redisChannel(opts.redisKeyPrefix);
  }

  protected override async publish(message: string): Promise<boolean> {
    let publisher = this.publisher;
    if (!publisher) {
      // Its own connection (the CLI): not retried; once it ends, the next publish opens another.
      const own = await this.client({ maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: () => null });
      own.once('end', () => {
        if (this.publisher === own) this.publisher = undefined;
      });
      this.publisher = publisher = own;
    }
    await publisher.publish(this.channel, message);
    return true;
  }

  override async start(): Promise<void> {
    const sub = await this.client({
      // Resubscribed by hand on every `ready`, so the caches are cleared only once the subscription is live again.
      autoResubscribe: false, maxRetriesPerRequest: null, connectTimeout: 2000, retryStrategy: (n: number) => this.backoff(n),
    });
    this.subscriber = sub;
    sub.on('error', (err: Error) => this.opts.onError?.(err, 'the Redis invalidation subscription'));
    sub.on('message', (_channel: string, message: string) => this.received(message));
    // Resolves once subscribed, or when the first attempt failed: a Redis down at boot must not hold the start up.
    let firstDone: () => void = () => undefined;
    const first = new Promise<void>((resolve) => {
      firstDone = resolve;
      for (const event of ['error', 'end']) sub.once(event, () => resolve());
      setTimeout(resolve, 2500).unref();
    });
    sub.on('ready', () => {
      sub.subscribe(this.channel).then(() => {
        this.resubscribed();
        firstDone();
      }, (err: unknown) => {
        this.opts.onError?.(asError(err), 'subscribing to Redis invalidations');
        if (!this.closing) sub.disconnect(true); // reconnects, and tries again at the next `ready`
      });
    });
    await first;
  }

  override async close(): Promise<void> {
    this.closing = true;
    this.subscriber?.disconnect();
    if (this.publisher && this.publisher !== this.opts.redis) this.publisher.disconnect();
  }

  private async client(options: Record<string, unknown>): Promise<Redis> {
    const { Redis: RedisClient } = await import('ioredis');
    const c = new RedisClient(this.url, options);
    c.on('error', () => undefined); // reported by the subscription's own handler, or by the failed publish
    return c;
  }
}

class PostgresBus extends LocalBus {
  override readonly transport = 'postgres';
  private readonly channel: string;
  private readonly connection: { connectionString: string; options: string | undefined };
  private listener: PgClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private closing = false;

  constructor(url: string, opts: InvalidationOptions) {
    super(opts);
    this.channel = postgresChannel(url);
    const parsed = new URL(url);
    parsed.searchParams.delete('schema');
    const options = parsed.searchParams.get('options') ?? undefined;
    parsed.searchParams.delete('options');
    this.connection = { connectionString: parsed.toString(), options };
  }

  protected override async publish(message: string): Promise<boolean> {
    // On the listening connection when it is up; else (the CLI, or a listener being re-established) on one of its own.
    const live = this.listener;
    if (live) {
      await live.query('SELECT pg_notify($1, $2)', [this.channel, message]);
      return true;
    }
    const client = this.newClient();
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT pg_notify($1, $2)', [this.channel, message]);
      return true;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  override async start(): Promise<void> {
    await this.listen();
  }

  override async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
  }

  private newClient(): PgClient {
    const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
    // Named after the channel: an operator (or a test) can find the listening connections in pg_stat_activity.
    return new pg.Client({ ...this.connection, application_name: this.channel });
  }

  private async listen(): Promise<void> {
    if (this.closing) return;
    const client = this.newClient();
    let lost = false;
    const onLost = (err?: Error): void => {
      if (lost) return;
      lost = true;
      if (this.listener === client) this.listener = undefined;
      void client.end().catch(() => undefined);
      if (this.closing) return;
      if (err) this.opts.onError?.(err, 'the PostgreSQL invalidation subscription');
      this.timer = setTimeout(() => void this.listen(), this.backoff(this.attempt++));
      this.timer.unref();
    };
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('the LISTEN connection ended')));
    client.on('notification', (n) => {
      if (n.channel === this.channel && n.payload) this.received(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
    } catch (err) {
      onLost(asError(err));
      return;
    }
    if (lost || this.closing) {
      await client.end().catch(() => undefined);
      return;
    }
    this.attempt = 0;
    this.listener = client;
    this.resubscribed();
  }
}
