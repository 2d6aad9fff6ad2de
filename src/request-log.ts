import type { LogRow, Store } from './store/types.js';

export interface RequestLogOptions {
  flushIntervalMs: number;
  batchSize: number;
  onError: (err: unknown, rows: number) => void;
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
    this.flushing = this.store.insertLogs(batch).catch((err: unknown) => {
      this.queue = batch.concat(this.queue);
      this.opts.onError(err, batch.length);
      this.schedule();
    }).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.queue.length > 0) await this.flush();
  }
}
