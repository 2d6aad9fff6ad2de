import { generateApiKey } from './auth.js';
import { randomBase62 } from './ids.js';
import { projectNameProblem } from './project-name.js';
import type { Invalidator } from './invalidation.js';
import type { LimitSpec } from './limits/types.js';
import { hashPassword, passwordProblem } from './management/passwords.js';
import { parseUsdToMicros, type Micros } from './money.js';
import type { OrgRole, User } from './store/accounts.js';
import { DEFAULT_PROJECT, type Project } from './store/tenancy.js';
import type { ApiKeyRecord, Org, Retention, Store } from './store/types.js';

/** Administrative operations shared by the CLI and tests; each returns what it did, for printing. */

/** `note`: the first credit's ledger note, what made it. */
export async function createOrg(store: Store, name: string, creditsUsd: string, retention: Retention, note?: string): Promise<Org> {
  if (!name.trim()) throw new Error('the organization name must not be empty');
  return store.createOrg(name.trim(), parseUsdToMicros(creditsUsd), retention, note);
}

export async function requireOrg(store: Store, name: string): Promise<Org> {
  const org = await store.findOrgByName(name);
  if (!org) throw new Error(`no organization named "${name}"`);
  return org;
}

export async function requireProject(store: Store, org: Org, name: string): Promise<Project> {
  const project = await store.tenancy.findProject(org.id, name);
  if (!project) throw new Error(`organization "${org.name}" has no project named "${name}"`);
  return project;
}

export async function createProject(store: Store, orgName: string, name: string, limits: LimitSpec = {}): Promise<{ org: Org; project: Project }> {
  const problem = projectNameProblem(name.trim());
  if (problem) throw new Error(`${JSON.stringify(name.trim())} cannot be a project name. ${problem}`);
  const org = await requireOrg(store, orgName);
  return { org, project: await store.tenancy.createProject(org.id, name.trim(), limits) };
}

export interface KeyOptions {
  /** Project name; the org's `default` project when absent. */
  project?: string;
  name?: string;
  expiresAt?: number | null;
  /** Model ids (already checked against the catalog); null or absent: every model. */
  allowedModels?: readonly string[] | null;
  /** rpm, tpm, concurrency, budget (docs/limits.md); none when absent. */
  limits?: LimitSpec;
}

/** Creates a key for an org; the returned `key` is the only time the whole key exists outside the client. */
export async function createKey(store: Store, orgName: string, opts: KeyOptions = {}): Promise<{ key: string; prefix: string; org: Org; project: Project; record: ApiKeyRecord }> {
  const org = await requireOrg(store, orgName);
  const project = await requireProject(store, org, opts.project ?? DEFAULT_PROJECT);
  const { key, prefix, hash } = generateApiKey();
  const record = await store.tenancy.createKey({
    orgId: org.id, projectId: project.id, prefix, hash, name: opts.name ?? '', expiresAt: opts.expiresAt ?? null,
    allowedModels: opts.allowedModels ?? null, createdBy: null, limits: opts.limits ?? {},
  });
  if (!record) throw new Error(`project "${project.name}" disappeared while the key was being created`);
  return { key, prefix, org, project, record };
}

/** What a change told the running instances: `pushed` when they evicted it at once, else they see it within their cache TTL. */
export interface Announced { pushed: boolean }

/** Revokes a key and announces it to every instance's cache (the CLI is a process of its own). */
export async function revokeKey(store: Store, prefix: string, invalidation?: Invalidator): Promise<Announced> {
  if (!(await store.revokeApiKey(prefix))) throw new Error(`no live API key with prefix "${prefix}"`);
  return { pushed: (await invalidation?.invalidate('api_key', prefix)) ?? false };
}

/** Sets an org's own key for a provider (BYOK) and announces it to every instance's cache. */
export async function setProviderKey(store: Store, orgName: string, provider: string, key: string, invalidation?: Invalidator): Promise<Announced> {
  const org = await requireOrg(store, orgName);
  await store.providerKeys.set(org.id, provider, key);
  return { pushed: (await invalidation?.invalidate('provider_key', org.id)) ?? false };
}

/**
 * Removes an org's own key for a provider (its requests go back to the gateway's key, and
 * are debited) and announces it. An org with no key for that provider is refused, naming
 * the providers it has keys for; the provider need not be in the catalogue any more.
 */
export async function deleteProviderKey(store: Store, orgName: string, provider: string, invalidation?: Invalidator): Promise<Announced> {
  const org = await requireOrg(store, orgName);
  if (!(await store.providerKeys.delete(org.id, provider))) {
    const held = (await store.providerKeys.list(org.id)).map((k) => k.providerId);
    throw new Error(`"${orgName}" has no own key for provider "${provider}" (${held.length ? `it has keys for: ${held.join(', ')}` : 'it has none'})`);
  }
  return { pushed: (await invalidation?.invalidate('provider_key', org.id)) ?? false };
}

/** Returns the new balance, micro-USD. */
export async function addCredits(store: Store, orgName: string, usd: string): Promise<Micros> {
  const org = await requireOrg(store, orgName);
  return store.addCredits(org.id, parseUsdToMicros(usd), 'credits added by CLI');
}

export interface NewUser {
  email: string;
  password: string;
  operator?: boolean;
  /** Make the user a member of this org (by name) with `role`. */
  org?: string;
  role?: OrgRole;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A console user (and optionally a membership); the password is hashed with scrypt and never stored. */
export async function createUser(store: Store, u: NewUser): Promise<{ user: User; org: Org | undefined }> {
  if (!EMAIL.test(u.email) || u.email.length > 254) throw new Error(`"${u.email}" is not an email address`);
  const problem = passwordProblem(u.password);
  if (problem) throw new Error(problem);
  if ((u.org === undefined) !== (u.role === undefined)) throw new Error('--org and --role go together');
  const org = u.org === undefined ? undefined : await requireOrg(store, u.org);
  const user = await store.accounts.createUser(u.email, await hashPassword(u.password), u.operator === true);
  if (org && u.role) await store.accounts.addMember(org.id, user.id, u.role);
  return { user, org };
}

/** What the first start's demo key and credit are called (gateway.yaml's `bootstrap`). */
export const DEMO_KEY_NAME = 'demo key (first start)';
export const DEMO_CREDITS_NOTE = 'demo credits: first start (gateway.yaml bootstrap)';

/** The operator login the embedded default creates on its first start. */
export const BOOTSTRAP_EMAIL = 'admin@localhost';

/**
 * First start with an empty database: a demo org with credits and one key to try the
 * gateway with, and an operator login for the console (its password shown once).
 */
export async function bootstrapDemo(store: Store, org: string, credits: number): Promise<{ key: string; org: Org; login: { email: string; password: string } | undefined } | undefined> {
  if ((await store.countOrgs()) > 0) return undefined;
  const created = await store.createOrg(org, credits, 'standard', DEMO_CREDITS_NOTE);
  const { key } = await createKey(store, created.name, { name: DEMO_KEY_NAME });
  let login: { email: string; password: string } | undefined;
  if ((await store.accounts.countUsers()) === 0) {
    login = { email: BOOTSTRAP_EMAIL, password: randomBase62(20) };
    await createUser(store, { ...login, operator: true });
  }
  return { key, org: created, login };
}
