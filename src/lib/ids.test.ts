import { describe, expect, it } from 'vitest';
import { IdPool, newId } from './ids.js';

describe('ids', () => {
  it('are a prefix and 24 base62 characters, pooled or not', () => {
    const pool = new IdPool();
    for (const id of [newId('req'), pool.next('req')]) expect(id).toMatch(/^req_[A-Za-z0-9]{24}$/);
  });

  it('do not repeat across many draws and pool refills', () => {
    const pool = new IdPool();
    const seen = new Set(Array.from({ length: 5000 }, () => pool.next('req')));
    expect(seen.size).toBe(5000);
  });

  it('use every character of the alphabet', () => {
    const pool = new IdPool();
    const chars = new Set(Array.from({ length: 200 }, () => pool.next('x').slice(2)).join(''));
    expect(chars.size).toBe(62);
  });
});
