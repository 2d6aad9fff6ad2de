import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import type { MembershipChange } from './accounts.js';
import { drivers, useStorePair } from './drivers.testkit.js';
import type { Store } from './types.js';

/*
 * Issue 27, finding 2: two owners demoted (or removed) at the same moment, through two
 * store instances as two gateway processes would. On PostgreSQL under READ COMMITTED the
 * owner count each statement checked could predate the other's commit: both answered
 * `ok` and the org was left with no owner.
 */
describe.each(drivers)('$name: an org always keeps an owner under concurrent changes', ({ setup }) => {
  const pair = useStorePair(setup, 'owners', () => 1_700_000_000_000);
  let store: Store;
  let other: Store;
  beforeAll(() => {
    ({ store, other } = pair);
  });

  const ROUNDS = 10;

  /** An org with two owners; returns it and the two owners' ids. */
  async function twoOwners(): Promise<{ orgId: string; a: string; b: string }> {
    const org = await store.createOrg(`org ${newId('o')}`, 0, 'standard');
    const [a, b] = await Promise.all([1, 2].map((i) => store.accounts.createUser(`${newId(`u${i}`)}@example.com`, 'x', false)));
    await store.accounts.addMember(org.id, a!.id, 'owner');
    await store.accounts.addMember(org.id, b!.id, 'owner');
    return { orgId: org.id, a: a!.id, b: b!.id };
  }

  async function check(orgId: string, answers: MembershipChange[]): Promise<void> {
    expect([...answers].sort()).toEqual(['last_owner', 'ok']);
    const owners = (await store.accounts.listMembers(orgId)).filter((m) => m.role === 'owner');
    expect(owners).toHaveLength(1);
  }

  it(`demoting both owners at once: one succeeds, the other is the last owner (${ROUNDS} rounds)`, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const { orgId, a, b } = await twoOwners();
      await check(orgId, await Promise.all([store.accounts.changeRole(orgId, a, 'admin'), other.accounts.changeRole(orgId, b, 'member')]));
    }
  });

  it(`removing both owners at once: one succeeds, the other is the last owner (${ROUNDS} rounds)`, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const { orgId, a, b } = await twoOwners();
      await check(orgId, await Promise.all([store.accounts.removeMember(orgId, a), other.accounts.removeMember(orgId, b)]));
    }
  });

  it(`demoting one owner while removing the other: one owner stays (${ROUNDS} rounds)`, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const { orgId, a, b } = await twoOwners();
      await check(orgId, await Promise.all([store.accounts.removeMember(orgId, a), other.accounts.changeRole(orgId, b, 'admin')]));
    }
  });
});
