/**
 * Limits how many holders run a section at once; the others wait in arrival order.
 * Used where each holder needs a lot of memory for a short time (a music track being
 * decoded, uploaded and re-sent), so peak memory is bounded by the limit, not the load.
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('a semaphore needs a limit of at least 1');
  }

  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next(); // the permit passes straight to the next holder
      else this.active--;
    };
  }
}
