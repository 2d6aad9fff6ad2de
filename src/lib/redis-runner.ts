import { createHash } from 'node:crypto';

/**
 * The part of an ioredis client the limits engine uses (an ioredis `Redis` fits). The
 * caller owns the client: the engine never connects, closes or reconfigures it.
 * Recommended options for it: `enableOfflineQueue: false` and `maxRetriesPerRequest: 1`,
 * so commands fail at once while Redis is down instead of queueing (the engine bounds
 * every call with its own timeout either way).
 */
export interface RedisLike {
  /** ioredis connection state: 'ready' when usable; 'reconnecting', 'close', 'end' when not. */
  readonly status: string;
  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  /** A batch of commands sent in one write, answered in order (ioredis's `pipeline()`); without it, one round trip per script. */
  pipeline?(): RedisBatch;
  /** For waiting, within the call's timeout, on a client still connecting (at boot). */
  once(event: 'ready', listener: () => void): unknown;
  removeListener(event: 'ready', listener: () => void): unknown;
}

/** The part of an ioredis pipeline the engine uses: `exec` answers [error, result] per command, in order. */
export interface RedisBatch {
  evalsha(sha: string, numKeys: number, ...args: Array<string | number>): unknown;
  exec(): Promise<Array<[Error | null, unknown]> | null>;
}

interface Queued {
  sha: string;
  script: string;
  args: ReadonlyArray<string | number>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Redis did not answer. `sent` is false when the script was never sent (the client was
 * not connected), true when it was sent and its outcome is unknown (it may still run),
 * which decides how a settle is replayed.
 */
export class StoreUnavailable extends Error {
  /**
   * @param message for logs (`onDegraded`): may name hosts and ports.
   * @param publicReason for the client's 503: says what failed, nothing about where.
   */
  constructor(message: string, readonly sent: boolean, readonly publicReason = 'the limits store failed') {
    super(message);
    this.name = 'StoreUnavailable';
  }
}

const DOWN = new Set(['reconnecting', 'close', 'end']);

/** The bound on each call when none is given (`redis.timeout_ms`). */
export const DEFAULT_CALL_TIMEOUT_MS = 500;

/**
 * Runs the engine's scripts by SHA (one round trip), falling back to sending the source
 * when Redis has forgotten it (a restarted Redis keeps no scripts). Every script is
 * answered within `timeoutMs` of being sent, whatever the client's own retry and queueing
 * settings (and a client still connecting is waited for at most `timeoutMs` first).
 *
 * The scripts of one turn of the event loop (the admits and settles of every request that
 * the turn handled) go to Redis as one pipeline: one write and one read instead of a round
 * trip each. On loopback a socket write also runs the receiving side's network stack, so
 * the writes were the largest part of what limits cost a request. A script waits at most
 * until the end of the turn that issued it.
 */
export class ScriptRunner {
  private readonly shas = new Map<string, string>();
  private queue: Queued[] = [];
  private connecting: Promise<void> | undefined;

  constructor(private readonly redis: RedisLike, private readonly timeoutMs: number) {}

  async run(script: string, args: ReadonlyArray<string | number>): Promise<unknown> {
    if (DOWN.has(this.redis.status)) throw new StoreUnavailable(`Redis is not connected (${this.redis.status})`, false, 'the limits store is not connected');
    if (this.redis.status !== 'ready') await this.ready();
    try {
      return await this.evaluate(script, args);
    } catch (err) {
      if (err instanceof StoreUnavailable) throw err;
      const message = String((err as Error).message);
      // ioredis refuses at once, unsent, when the socket is gone and its offline queue is off.
      if (message.startsWith('Stream isn\'t writeable')) throw new StoreUnavailable(`Redis is not connected: ${message}`, false, 'the limits store is not connected');
      throw new StoreUnavailable(`Redis failed: ${message}`, true);
    }
  }

  /**
   * Still connecting (a client just created): waits for it, at most `timeoutMs`, rather than
   * fail or queue blind. The requests that arrive meanwhile share one wait (one listener).
   */
  private ready(): Promise<void> {
    this.connecting ??= this.waitReady().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async waitReady(): Promise<void> {
    let onReady: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        this.redis.once('ready', (onReady = resolve));
        timer = setTimeout(() => reject(new StoreUnavailable(`Redis was not connected within ${this.timeoutMs} ms`, false, 'the limits store is not connected')), this.timeoutMs);
      });
    } finally {
      clearTimeout(timer);
      if (onReady) this.redis.removeListener('ready', onReady);
    }
  }

  private evaluate(script: string, args: ReadonlyArray<string | number>): Promise<unknown> {
    let sha = this.shas.get(script);
    if (!sha) this.shas.set(script, (sha = createHash('sha1').update(script).digest('hex')));
    return new Promise((resolve, reject) => {
      if (this.queue.push({ sha: sha!, script, args, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  private async evaluateOne(sha: string, script: string, args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await this.redis.evalsha(sha, 0, ...args);
    } catch (err) {
      return this.orSource(err, script, args);
    }
  }

  /** NOSCRIPT (Redis forgot the script): sent again with its source; any other error stands. */
  private orSource(err: unknown, script: string, args: ReadonlyArray<string | number>): Promise<unknown> {
    if (!String((err as Error).message).startsWith('NOSCRIPT')) return Promise.reject(err);
    return this.redis.eval(script, 0, ...args);
  }

  /** Sends the queued scripts (one pipeline) under one deadline: a script unanswered by then fails as sent, outcome unknown. */
  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    const timer = setTimeout(() => {
      // A promise settles once: those already answered ignore this.
      const late = new StoreUnavailable(`Redis did not answer within ${this.timeoutMs} ms`, true, `the limits store did not answer within ${this.timeoutMs} ms`);
      for (const q of batch) q.reject(late);
    }, this.timeoutMs);
    let open = batch.length;
    const settle = (q: Queued, p: Promise<unknown>): void => void p.then(q.resolve, q.reject).finally(() => {
      if (--open === 0) clearTimeout(timer);
    });
    if (batch.length === 1) {
      const q = batch[0]!;
      settle(q, this.evaluateOne(q.sha, q.script, q.args));
      return;
    }
    if (!this.redis.pipeline) {
      for (const q of batch) settle(q, this.evaluateOne(q.sha, q.script, q.args));
      return;
    }
    const pipeline = this.redis.pipeline();
    for (const q of batch) pipeline.evalsha(q.sha, 0, ...q.args);
    pipeline.exec().then((replies) => {
      batch.forEach((q, i) => {
        const [err, value] = replies?.[i] ?? [new Error('Redis answered the pipeline without replies'), undefined];
        settle(q, err ? this.orSource(err, q.script, q.args) : Promise.resolve(value));
      });
    }, (err: unknown) => {
      for (const q of batch) settle(q, Promise.reject(err));
    });
  }
}
