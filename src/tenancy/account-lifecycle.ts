import { rotatedApiKey } from './auth.js';
import type { Invalidator } from './invalidation.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { ActivationChange } from '../store/lifecycle.js';
import type { ApiKeyRecord, Store } from '../store/types.js';

/*
 * The account lifecycle shared by the management API (src/management/routes-lifecycle.ts)
 * and the CLI (cli/lifecycle.ts): docs/management.md "Account lifecycle".
 */

/** The longest grace a rotated key's old secret may get: 7 days. */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600;

/**
 * Gives a live key a new secret; the old one is accepted for `graceSeconds` more (0: not at
 * all). Every instance is told at once (their cached record is evicted and read again with
 * the new secret and the old one's end), so none serves the old secret past its grace.
 * Undefined when the org has no such live key.
 */
export async function rotateKey(store: Store, invalidation: Invalidator, orgId: string, keyId: string, graceSeconds: number, now: number):
Promise<{ key: string; record: ApiKeyRecord; pushed: boolean } | undefined> {
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_ROTATION_GRACE_SECONDS) {
    throw new RangeError(`the grace period is a whole number of seconds from 0 to ${MAX_ROTATION_GRACE_SECONDS} (7 days)`);
  }
  const current = await store.tenancy.getKey(orgId, keyId);
  if (!current || current.revokedAt !== null) return undefined;
  const { key, hash } = rotatedApiKey(current.prefix);
  const record = await store.lifecycle.rotateKey(orgId, keyId, hash, now + graceSeconds * 1000);
  if (!record) return undefined;
  const pushed = await invalidation.invalidate('api_key', record.prefix);
  return { key, record, pushed };
}

/** Sets a user's new password, checked like at creation; ends every session but `keepSession`. */
export async function setPassword(store: Store, userId: string, password: string, keepSession: string | undefined): Promise<void> {
  const problem = passwordProblem(password);
  if (problem) throw new RangeError(problem);
  await store.lifecycle.changePassword(userId, await hashPassword(password), keepSession);
}

/**
 * Deactivates or reactivates a user. Sessions and management tokens are read from the
 * database at every request (never cached), so a deactivation stops them on every
 * instance as soon as it is committed; its sessions are also deleted.
 */
export function setActive(store: Store, userId: string, active: boolean): Promise<ActivationChange> {
  return store.lifecycle.setActive(userId, active);
}
