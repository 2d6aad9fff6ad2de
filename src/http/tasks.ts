import type { TaskDef } from '../pipeline/plugin.js';

/**
 * Periodic maintenance tasks registered by plugins. A task never overlaps itself: a
 * tick that finds its last run still going is skipped, so each run is reported once
 * however long it lasts. A failing run is reported and retried at the next interval.
 */
export class TaskRunner {
  private readonly tasks: TaskDef[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<string>>();

  constructor(private readonly onResult: (task: string, result: string | Error) => void) {}

  add(def: TaskDef): void {
    if (this.tasks.some((t) => t.name === def.name)) throw new Error(`task "${def.name}" is registered twice`);
    this.tasks.push(def);
  }

  get names(): string[] {
    return this.tasks.map((t) => t.name);
  }

  /** Runs one task now, or joins its run already under way. */
  run(def: TaskDef): Promise<string> {
    let p = this.running.get(def.name);
    if (!p) {
      p = def.run().finally(() => this.running.delete(def.name));
      this.running.set(def.name, p);
    }
    return p;
  }

  /** Runs every task once, in registration order; returns each summary. */
  async runAll(): Promise<Array<{ task: string; result: string }>> {
    const out: Array<{ task: string; result: string }> = [];
    for (const t of this.tasks) out.push({ task: t.name, result: await this.run(t) });
    return out;
  }

  start(): void {
    for (const t of this.tasks) {
      const timer = setInterval(() => {
        if (this.running.has(t.name)) return; // reported when that run ends, once
        this.run(t).then((r) => this.onResult(t.name, r), (e: unknown) => this.onResult(t.name, e instanceof Error ? e : new Error(String(e))));
      }, t.intervalMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  /** Stops the timers and waits for runs under way. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    await Promise.allSettled([...this.running.values()]);
  }
}
