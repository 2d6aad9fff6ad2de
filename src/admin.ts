import { generateApiKey } from './auth.js';
import { formatUsd, parseUsdToMicros } from './money.js';
import type { Org, Retention, Store } from './store/types.js';

/** Administrative operations shared by the CLI and tests; each returns what it did, for printing. */

export async function createOrg(store: Store, name: string, creditsUsd: string, retention: Retention): Promise<Org> {
  if (!name.trim()) throw new Error('the organization name must not be empty');
  return store.createOrg(name.trim(), parseUsdToMicros(creditsUsd), retention);
}

export async function requireOrg(store: Store, name: string): Promise<Org> {
  const org = await store.findOrgByName(name);
  if (!org) throw new Error(`no organization named "${name}"`);
  return org;
}

/** Creates a key for an org; the returned `key` is the only time the whole key exists outside the client. */
export async function createKey(store: Store, orgName: string): Promise<{ key: string; prefix: string; org: Org }> {
  const org = await requireOrg(store, orgName);
  const { key, prefix, hash } = generateApiKey();
  await store.createApiKey(org.id, prefix, hash);
  return { key, prefix, org };
}

export async function revokeKey(store: Store, prefix: string): Promise<void> {
  if (!(await store.revokeApiKey(prefix))) throw new Error(`no live API key with prefix "${prefix}"`);
}

export async function addCredits(store: Store, orgName: string, usd: string): Promise<string> {
  const org = await requireOrg(store, orgName);
  const balance = await store.addCredits(org.id, parseUsdToMicros(usd), 'credits added by CLI');
  return formatUsd(balance);
}

/** First start with an empty database: a demo org with credits and one key to try the gateway with. */
export async function bootstrapDemo(store: Store, org: string, credits: number): Promise<{ key: string; org: Org } | undefined> {
  if ((await store.countOrgs()) > 0) return undefined;
  const created = await store.createOrg(org, credits, 'standard');
  const { key } = await createKey(store, created.name);
  return { key, org: created };
}
