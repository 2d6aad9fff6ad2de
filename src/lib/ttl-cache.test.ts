import { describe, expect, it } from 'vitest';
import { TtlCache } from './ttl-cache.js';

describe('TtlCache', () => {
  it('keeps an entry for its TTL on the given clock, then reads as absent', () => {
    let clock = 1_000_000;
    const cache = new TtlCache<string, { v: number }>({ max: 10, ttlMs: 1000, now: () => clock });
    cache.set('a', { v: 1 });
    clock += 1000;
    expect(cache.get('a')).toEqual({ v: 1 });
    clock += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.peek('a')).toBeUndefined();
  });

  it('past its size drops the least recently used entry, not everything', () => {
    const cache = new TtlCache<string, { v: number }>({ max: 3, ttlMs: 60_000, now: Date.now });
    for (const k of ['a', 'b', 'c']) cache.set(k, { v: k.charCodeAt(0) });
    expect(cache.get('a')).toBeDefined(); // now b is the least recently used
    cache.set('d', { v: 4 });
    expect(['a', 'b', 'c', 'd'].map((k) => cache.peek(k) !== undefined)).toEqual([true, false, true, true]);
  });

  it('with a TTL of 0 caches nothing: every lookup goes to the source', () => {
    const cache = new TtlCache<string, { v: number }>({ max: 3, ttlMs: 0, now: Date.now });
    cache.set('a', { v: 1 });
    expect(cache.get('a')).toBeUndefined();
  });

  it('forgets an entry on delete', () => {
    const cache = new TtlCache<string, { v: number }>({ max: 3, ttlMs: 60_000, now: Date.now });
    cache.set('a', { v: 1 });
    cache.delete('a');
    expect(cache.get('a')).toBeUndefined();
  });
});
