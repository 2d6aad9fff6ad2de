import { sumBuckets, type UsageBucket } from '../store/log-query.js';
import type { KeyListItem } from '../store/tenancy.js';
import type { ManagementDeps } from './deps.js';

/** A usage bucket by user: the user who created the keys (null: keys made by the command line or the first start). */
export type UserBucket = Omit<UsageBucket, 'apiKeyId'> & { userId: string | null };

/**
 * Spend by user, from buckets grouped by key: each key's creator, summed exactly (integer
 * micro-USD). A user's spend is what the keys they created spent, whoever holds them now.
 */
export function byUser(buckets: readonly UsageBucket[], keys: ReadonlyMap<string, KeyListItem>): UserBucket[] {
  const mine = buckets.map(({ apiKeyId, ...b }): UserBucket => ({ ...b, userId: apiKeyId ? keys.get(apiKeyId)?.createdBy ?? null : null }));
  return sumBuckets(mine, (b) => JSON.stringify([b.day ?? null, b.model ?? null, b.projectId ?? null, b.userId]));
}

/** Emails of the users, by id (a deleted user's id maps to nothing). */
export async function emailsOf(d: ManagementDeps, ids: Iterable<string | null>): Promise<Map<string, string>> {
  const unique = [...new Set([...ids].filter((i): i is string => i !== null))];
  const users = await Promise.all(unique.map((id) => d.store.accounts.getUser(id)));
  return new Map(users.filter((u) => u !== undefined).map((u) => [u.id, u.email]));
}
