import { afterAll, describe, expect, it } from 'vitest';
import { client, deletePrefix, REDIS_URL, testPrefix } from '../limits/redis.testkit.js';
import { MemoryLoginThrottle, RedisLoginThrottle, type LoginThrottle } from './throttle.js';

const LIMITS = { perAccount: 2, perIp: 3 };

/** The same contract for both drivers: failures count per account and per address; successes do not. */
async function contract(throttle: LoginThrottle): Promise<void> {
  const alice = { email: 'alice@example.com', ip: '10.0.0.1' };
  expect((await throttle.check(alice)).waitMs).toBe(0);
  await throttle.failed(alice);
  expect((await throttle.check(alice)).waitMs).toBe(0);
  await throttle.failed(alice);
  const blocked = await throttle.check(alice);
  expect(blocked.scope).toBe('account');
  expect(blocked.waitMs).toBeGreaterThan(0);
  expect(blocked.waitMs).toBeLessThanOrEqual(60_000);
  // The same account from elsewhere is refused too; another account from the same address is not, until the address's limit.
  expect((await throttle.check({ ...alice, ip: '10.0.0.2' })).waitMs).toBeGreaterThan(0);
  const bob = { email: 'bob@example.com', ip: '10.0.0.1' };
  expect((await throttle.check(bob)).waitMs).toBe(0);
  await throttle.failed(bob);
  expect(await throttle.check(bob)).toMatchObject({ scope: 'address' });
  expect((await throttle.check({ email: 'carol@example.com', ip: '10.0.0.1' })).waitMs).toBeGreaterThan(0);
  expect((await throttle.check({ email: 'carol@example.com', ip: '10.0.0.9' })).waitMs).toBe(0);
}

describe('login throttling', () => {
  it('in process: counts failures over a sliding minute, then lets the subject try again', async () => {
    let now = 1_000_000;
    const throttle = new MemoryLoginThrottle(LIMITS, () => now);
    await contract(throttle);
    const alice = { email: 'alice@example.com', ip: '10.0.0.1' };
    now += 60_001;
    expect((await throttle.check(alice)).waitMs).toBe(0);
  });

  it('in process: holds a bounded number of subjects, forgetting the least recently failed first', async () => {
    const throttle = new MemoryLoginThrottle(LIMITS, () => 0, 100);
    const alice = { email: 'alice@example.com', ip: '10.0.0.1' };
    await throttle.failed(alice);
    await throttle.failed(alice);
    expect((await throttle.check(alice)).waitMs).toBeGreaterThan(0);
    // 100 subjects fit: alice is still remembered among 48 others (2 subjects per failure: account and address).
    for (let i = 0; i < 48; i++) await throttle.failed({ email: `u${i}@example.com`, ip: `10.1.0.${i}` });
    expect((await throttle.check(alice)).waitMs).toBeGreaterThan(0);
    for (let i = 48; i < 100; i++) await throttle.failed({ email: `u${i}@example.com`, ip: `10.1.0.${i}` });
    expect((await throttle.check(alice)).waitMs).toBe(0);
  });

  describe('across instances (Redis)', () => {
    const prefix = testPrefix();
    const redis = client(REDIS_URL);
    afterAll(async () => {
      await deletePrefix(redis, prefix);
      redis.disconnect();
    });

    it('counts the failures of every instance together', async () => {
      await contract(new RedisLoginThrottle(redis, LIMITS, prefix));
      // A second instance sees what the first counted.
      const other = new RedisLoginThrottle(redis, LIMITS, prefix);
      expect((await other.check({ email: 'alice@example.com', ip: '10.7.7.7' })).waitMs).toBeGreaterThan(0);
    });
  });
});
