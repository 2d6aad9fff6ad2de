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
