import { describe, expect, it } from 'vitest';
import { Semaphore } from './semaphore.js';

describe('Semaphore', () => {
  it('never lets more than the limit in, and serves waiters in order', async () => {
    const s = new Semaphore(2);
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      const release = await s.acquire();
      inside++;
      most = Math.max(most, inside);
      order.push(i);
      await new Promise((r) => setImmediate(r));
      inside--;
      release();
      release(); // a second release is harmless
    }));
    expect(most).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('refuses a limit below one', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});
