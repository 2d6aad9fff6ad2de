import { describe, expect, it } from 'vitest';
import type { Deployment } from '../model/routing.js';
import { CooldownBook } from './cooldown.js';
import { Router } from './router.js';

const NOW = 1_800_000_000_000;
const deployment = (name: string): Deployment => ({
  provider: 'openai', name, apiKey: `sk-${name}`, baseUrl: 'http://127.0.0.1:1', weight: 1, rpm: undefined, tpm: undefined, id: `openai/${name}#x`, fingerprint: 'x',
});

function router(): { router: Router; cooldowns: CooldownBook } {
  const cooldowns = new CooldownBook({ now: () => NOW });
  return { router: new Router({ settings: { strategy: 'weighted', cooldownMs: 30_000, groups: new Map() }, cooldowns, now: () => NOW }), cooldowns };
}

describe('a failed attempt takes its deployment out for as long as the provider asks', () => {
  it('a 429 or a 5xx with Retry-After rests for it; without one, for routing.cooldown_ms; a 4xx not at all', () => {
    const { router: r, cooldowns } = router();
    const [east, west, north, south] = ['east', 'west', 'north', 'south'].map(deployment) as [Deployment, Deployment, Deployment, Deployment];
    expect(r.failed(east, '429', 429, { 'retry-after': '2' }, false, true)).toBe(true);
    expect(r.failed(west, '5xx', 503, { 'retry-after': '7' }, false, true)).toBe(true);
    expect(r.failed(north, '5xx', 500, {}, false, true)).toBe(true);
    expect(r.failed(south, '4xx', 400, { 'retry-after': '9' }, false, true)).toBe(false);
    expect([east, west, north, south].map((d) => cooldowns.until(d))).toEqual([NOW + 2000, NOW + 7000, NOW + 30_000, undefined]);
  });

  it('a provider with one deployment is never taken out', () => {
    const { router: r, cooldowns } = router();
    const only = deployment('only');
    expect(r.failed(only, '5xx', 503, { 'retry-after': '7' }, false, false)).toBe(false);
    expect(cooldowns.state(only)).toBe('healthy');
  });
});
