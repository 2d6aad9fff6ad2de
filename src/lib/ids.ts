import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Random base62 text of `length` characters (unbiased: bytes ≥ 248 are redrawn). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

/** An id with a readable type prefix: `req_…`, `org_…`, `key_…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(24)}`;
}

/**
 * Request ids on the hot path: the same alphabet and length as `newId`, drawn from a
 * pooled random buffer refilled 4 KB at a time instead of a system call per id.
 */
export class IdPool {
  private pool = Buffer.alloc(0);
  private offset = 0;

  next(prefix: string, length = 24): string {
    let out = '';
    while (out.length < length) {
      if (this.offset >= this.pool.length) {
        this.pool = randomBytes(4096);
        this.offset = 0;
      }
      const b = this.pool[this.offset++] ?? 255;
      if (b < 248) out += ALPHABET[b % 62];
    }
    return `${prefix}_${out}`;
  }
}
