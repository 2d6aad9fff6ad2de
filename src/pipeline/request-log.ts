import type { LogRow, Store } from '../store/types.js';

export interface RequestLogOptions {
  flushIntervalMs: number;
  batchSize: number;
  /** A failed batch (`rows` > 0, kept for the next flush), or a failed last-use update of the keys (`rows` = 0, not retried). */
  onError: (err: unknown, rows: number) => void;
  /** After a failed batch, with every row still queued (the spill file keeps them durably). */
  onBacklog?: (rows: readonly LogRow[]) => void;
  /** After a batch was written and nothing is left queued. */
  onDrained?: () => void;
}

/**
 * Request log rows are queued in memory and written in batches, off the request
 * path. `close()` writes what is queued; a failed batch is kept and retried at the
 * next flush rather than dropped.
 */
export class RequestLogWriter {
  private queue: LogRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly store: Store, private readonly opts: RequestLogOptions) {}

  /** Rows taken over from a spill file of a process that died (written with their settlements). */
  enqueueAll(rows: readonly LogRow[]): void {
    for (const r of rows) this.enqueue(r);
  }

  enqueue(row: LogRow): void {
    this.queue.push(row);
    if (this.queue.length >= this.opts.batchSize) void this.flush();
    else this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => void this.flush(), this.opts.flushIntervalMs);
    this.timer.unref();
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Writes every queued row; concurrent callers share one write. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.flushing) await this.flushing;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.flushing = this.store.insertLogs(batch).then(async () => {
      if (this.queue.length === 0) this.opts.onDrained?.();
      await this.touchKeys(batch);
      await this.writeBodies(batch);
    }, (err: unknown) => {
      this.queue = batch.concat(this.queue);
      this.opts.onError(err, batch.length);
      try {
        this.opts.onBacklog?.(this.queue);
      } catch (spillErr) {
        this.opts.onError(spillErr, this.queue.length);
      }
      this.schedule();
    }).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  /**
   * Each key's last use, written with its batch rather than per request. Best effort:
   * a failure is reported and not retried (the log rows, which are what counts, are in).
   */
  private async touchKeys(batch: readonly LogRow[]): Promise<void> {
    const lastUsed = new Map<string, number>();
    for (const r of batch) if (r.apiKeyId !== null) lastUsed.set(r.apiKeyId, Math.max(lastUsed.get(r.apiKeyId) ?? 0, r.createdAt));
    try {
      await this.store.tenancy.touchKeys(lastUsed);
    } catch (err) {
      this.opts.onError(err, 0);
    }
  }

  /**
   * The logged bodies of the batch, into their own table once their rows are in. Best
   * effort like the keys' last use: a failure is reported, the rows and charges stand.
   */
  private async writeBodies(batch: readonly LogRow[]): Promise<void> {
    const bodies = batch.flatMap((r) => (r.bodies ? [r.bodies] : []));
    if (bodies.length === 0) return;
    try {
      await this.store.bodies.insert(bodies);
    } catch (err) {
      this.opts.onError(err, 0);
    }
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.queue.length > 0) await this.flush();
  }
}
