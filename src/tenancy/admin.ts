import { closestByWords } from '../config/did-you-mean.js';
import { fieldLabel } from '../lib/field-messages.js';
import type { BodyLogging, GuardrailSpec } from '../model/guardrails.js';
import type { CacheSetting } from '../model/cache.js';
import { generateApiKey } from './auth.js';
import { invalidField } from '../lib/errors.js';
import { randomBase62 } from '../lib/ids.js';
import { projectNameProblem } from './project-name.js';
import type { InvalidationKind, Invalidator } from './invalidation.js';
import type { LimitSpec } from '../model/limits.js';
import { hashPassword, passwordProblem } from './passwords.js';
import { parseUsdToMicros, type Micros } from '../lib/money.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { UnsupportedParamsPolicy } from '../providers/types.js';
import type { Invitation, Member, MembershipChange, OrgRole, User } from '../store/accounts.js';
import type { ProviderKeyInfo } from '../store/provider-key-store.js';
import { DEFAULT_PROJECT, type NewApiKey, type Project } from '../store/tenancy.js';
import type { ApiKeyRecord, Org, Retention, Store } from '../store/types.js';

/*
 * The admin service: what the CLI and the management API change (keys, limits, project
 * settings, provider keys, credits, users, members and invitations), written once; what
 * only the API changes today (members, invitations) is here too, for the CLI to share.
 * The functions taking ids are the API's; those taking names wrap them for the CLI. Each
 * returns what it did, for printing, and tells running instances through the invalidator
 * where caches hold it.
 */

/** The most a project's default_max_tokens may be: above any model's output bound today, and a cap on what one request can hold. */
export const MAX_DEFAULT_MAX_TOKENS = 1_000_000;

/** Allow-list entries as canonical model ids; an id no provider serves is a 400 naming its position. */
export function allowedModels(catalog: ProviderCatalog, models: readonly string[] | null | undefined, field = 'allowed_models'): string[] | null {
  if (models === null || models === undefined) return null;
  const ids = models.map((m, i) => {
    if (catalog.groups.has(m)) return m; // a model group, by its name
    const route = catalog.routesFor(m)[0];
    if (!route) {
      const near = closestByWords(m, catalog.allRoutes().flatMap((r) => [r.model.id, ...r.model.aliases]));
      throw invalidField(`${field}[${i}]`, `No provider serves a model "${m}"${near ? `; did you mean ${near}?` : ''} (the Models page lists them)`);
    }
    return route.model.id;
  });
  return [...new Set(ids)];
}

/** A future time from an ISO 8601 string; past or unreadable is a 400 naming the field. */
export function futureTime(iso: string | null | undefined, now: number, field: string): number | null {
  if (iso === null || iso === undefined) return null;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) throw invalidField(field, `${fieldLabel(field)} must be an ISO 8601 date-time, e.g. 2027-01-31T12:00:00Z`);
  if (at <= now) throw invalidField(field, `${fieldLabel(field)} must be in the future`);
  return at;
}

/** What a change told the running instances: `pushed` when they evicted it at once, else they see it within their cache TTL. */
export interface Announced { pushed: boolean }

const announce = async (invalidation: Invalidator | undefined, kind: InvalidationKind, id: string): Promise<Announced> =>
  ({ pushed: (await invalidation?.invalidate(kind, id)) ?? false });

/** Issues a key in the project; the whole key exists only in the result. Undefined when the project left the org meanwhile (nothing written). */
export async function issueKey(
  store: Store, project: Pick<Project, 'id' | 'orgId'>, k: Omit<NewApiKey, 'orgId' | 'projectId' | 'prefix' | 'hash'>,
): Promise<{ key: string; record: ApiKeyRecord } | undefined> {
  const { key, prefix, hash } = generateApiKey();
  const record = await store.tenancy.createKey({ ...k, orgId: project.orgId, projectId: project.id, prefix, hash });
  return record && { key, record };
}

/** Replaces a key's limits and evicts it from every instance's cache; undefined when the org has no such key. */
/** A change of a key's name, limits and response-cache setting; what is left out keeps its value, null clears the cache setting. */
export interface KeyChange {
  /** A new label (the key itself is unchanged). */
  name?: string | undefined;
  limits?: LimitSpec;
  cache?: CacheSetting | null;
}

/** Changes a key's limits, cache setting and name, then evicts the key from every instance's cache; undefined when the key is not the org's. */
export async function changeKey(
  store: Store, invalidation: Invalidator | undefined, key: Pick<ApiKeyRecord, 'orgId' | 'id' | 'prefix'>, change: KeyChange,
): Promise<Announced | undefined> {
  if (change.limits && !(await store.limits.setKeyLimits(key.orgId, key.id, change.limits))) return undefined;
  if (change.cache !== undefined && !(await store.tenancy.setCacheSetting(key.orgId, 'key', key.id, change.cache))) return undefined;
  if (change.name !== undefined && !(await store.tenancy.renameKey(key.orgId, key.id, change.name))) return undefined;
  return announce(invalidation, 'api_key', key.prefix);
}

/** A change of a project's limits and settings; what is left out keeps its value, null clears a setting. */
export interface ProjectChange {
  limits?: LimitSpec;
  defaultMaxTokens?: number | null;
  unsupportedParams?: UnsupportedParamsPolicy | null;
  cache?: CacheSetting | null;
  guardrails?: GuardrailSpec[];
  /** null: off. */
  bodyLogging?: BodyLogging | null;
}

/**
 * Changes a project's limits and settings (in that order), then evicts every cached key so
 * the project's keys read them at once on every instance; undefined when the project is not the org's.
 */
export async function changeProject(
  store: Store, invalidation: Invalidator | undefined, project: Pick<Project, 'orgId' | 'id'>, change: ProjectChange,
): Promise<Announced | undefined> {
  const { orgId, id } = project;
  if (change.limits && !(await store.limits.setProjectLimits(orgId, id, change.limits))) return undefined;
  if (change.defaultMaxTokens !== undefined && !(await store.tenancy.setProjectDefaultMaxTokens(orgId, id, change.defaultMaxTokens))) return undefined;
  if (change.unsupportedParams !== undefined && !(await store.tenancy.setProjectUnsupportedParams(orgId, id, change.unsupportedParams))) return undefined;
  if (change.cache !== undefined && !(await store.tenancy.setCacheSetting(orgId, 'project', id, change.cache))) return undefined;
  if ((change.guardrails !== undefined || change.bodyLogging !== undefined)
    && !(await store.tenancy.setProjectGuardrails(orgId, id, { guardrails: change.guardrails, bodyLogging: change.bodyLogging }))) return undefined;
  return announce(invalidation, 'limits', id);
}

/** Sets an org's own key for a provider (BYOK, sealed at rest) and announces it to every instance's cache. */
export async function putProviderKey(
  store: Store, invalidation: Invalidator | undefined, orgId: string, provider: string, key: string, actor: string | null = null,
): Promise<ProviderKeyInfo & Announced> {
  const info = await store.providerKeys.set(orgId, provider, key, actor);
  return { ...info, ...(await announce(invalidation, 'provider_key', orgId)) };
}

/** Removes an org's own key for a provider and announces it; undefined when the org has none for it. */
export async function removeProviderKey(store: Store, invalidation: Invalidator | undefined, orgId: string, provider: string): Promise<Announced | undefined> {
  if (!(await store.providerKeys.delete(orgId, provider))) return undefined;
  return announce(invalidation, 'provider_key', orgId);
}

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
  const issued = await issueKey(store, project, {
    name: opts.name ?? '', expiresAt: opts.expiresAt ?? null, allowedModels: opts.allowedModels ?? null, createdBy: null, limits: opts.limits ?? {},
  });
  if (!issued) throw new Error(`project "${project.name}" disappeared while the key was being created`);
  const { key, record } = issued;
  const prefix = record.prefix;
  return { key, prefix, org, project, record };
}

/** Revokes a key and announces it to every instance's cache (the CLI is a process of its own). */
export async function revokeKey(store: Store, prefix: string, invalidation?: Invalidator): Promise<Announced> {
  if (!(await store.revokeApiKey(prefix))) throw new Error(`no live API key with prefix "${prefix}"`);
  return announce(invalidation, 'api_key', prefix);
}

/** Sets an org's own key for a provider (BYOK) and announces it to every instance's cache. */
export async function setProviderKey(store: Store, orgName: string, provider: string, key: string, invalidation?: Invalidator): Promise<Announced> {
  const org = await requireOrg(store, orgName);
  const { pushed } = await putProviderKey(store, invalidation, org.id, provider, key);
  return { pushed };
}

/**
 * Removes an org's own key for a provider (its requests go back to the gateway's key, and
 * are debited) and announces it. An org with no key for that provider is refused, naming
 * the providers it has keys for; the provider need not be in the catalogue any more.
 */
export async function deleteProviderKey(store: Store, orgName: string, provider: string, invalidation?: Invalidator): Promise<Announced> {
  const org = await requireOrg(store, orgName);
  const removed = await removeProviderKey(store, invalidation, org.id, provider);
  if (removed) return removed;
  const held = (await store.providerKeys.list(org.id)).map((k) => k.providerId);
  throw new Error(`"${orgName}" has no own key for provider "${provider}" (${held.length ? `it has keys for: ${held.join(', ')}` : 'it has none'})`);
}

/**
 * Adds credits to an org, a negative amount removing them (never more than is free: the
 * store's CreditRefusedError says how much is), with a ledger row naming why and who (a
 * user id; null: the CLI). Returns the new balance, micro-USD.
 */
export function creditOrg(store: Store, orgId: string, amount: Micros, note: string, by: string | null = null): Promise<Micros> {
  return store.addCredits(orgId, amount, note, by);
}

/** `gateway credits add`: returns the new balance, micro-USD. */
export async function addCredits(store: Store, orgName: string, usd: string): Promise<Micros> {
  const org = await requireOrg(store, orgName);
  return creditOrg(store, org.id, parseUsdToMicros(usd), 'credits added by CLI');
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
  const user = await newUser(store, u.email, u.password, u.operator === true);
  if (org && u.role) await store.accounts.addMember(org.id, user.id, u.role);
  return { user, org };
}

/** A user with this password, hashed (scrypt) and never stored; a taken email is the store's DuplicateError. */
const newUser = async (store: Store, email: string, password: string, operator: boolean): Promise<User> =>
  store.accounts.createUser(email, await hashPassword(password), operator);

/**
 * Makes the user with this email a member of an org with a role; with `password`, a user
 * the instance does not have yet is created first (a weak password is a 400 naming it).
 * Undefined when there is no such user and no password (invite them instead). A user
 * already a member, or an email taken meanwhile, is the store's DuplicateError.
 */
export async function addMember(store: Store, orgId: string, email: string, role: OrgRole, password?: string): Promise<Member | undefined> {
  let user: User | undefined = await store.accounts.findUserByEmail(email);
  if (!user && password !== undefined) {
    const problem = passwordProblem(password);
    if (problem) throw invalidField('password', `"password": ${problem}`);
    user = await newUser(store, email, password, false);
  }
  return user && store.accounts.addMember(orgId, user.id, role);
}

/**
 * Changes a member's role, or removes them (`role` null). Nothing is written for a user
 * who is not a member (`not_found`) or a change that would leave the org without an
 * owner (`last_owner`).
 */
export function changeMembership(store: Store, orgId: string, userId: string, role: OrgRole | null): Promise<MembershipChange> {
  return role === null ? store.accounts.removeMember(orgId, userId) : store.accounts.changeRole(orgId, userId, role);
}

/** Invites an email to an org with a role, until `expiresAt`; it joins when its user accepts. */
export function inviteMember(store: Store, orgId: string, email: string, role: OrgRole, by: string | null, expiresAt: number): Promise<Invitation> {
  return store.accounts.createInvitation(orgId, email, role, by, expiresAt);
}

/**
 * Accepts a pending invitation addressed to the user: they join its org with its role.
 * Undefined when it is not theirs, gone, expired or already ended (nothing written). A user
 * already in the org gets the store's DuplicateError, the invitation marked accepted by then.
 */
export async function acceptInvitation(store: Store, id: string, user: Pick<User, 'id' | 'email'>): Promise<{ invitation: Invitation; member: Member } | undefined> {
  const invitation = await store.accounts.resolveInvitation(id, 'accepted', { email: user.email });
  return invitation && { invitation, member: await store.accounts.addMember(invitation.orgId, user.id, invitation.role) };
}

/** Declines (its invitee, by email) or revokes (its org) a pending invitation; undefined when there is none such to end. */
export function endInvitation(store: Store, id: string, end: 'declined' | 'revoked', by: { email: string } | { orgId: string }): Promise<Invitation | undefined> {
  return store.accounts.resolveInvitation(id, end, by);
}

/** What the first start's demo key and credit are called (gateway.yaml's `bootstrap`). */
const DEMO_KEY_NAME = 'demo key (first start)';
const DEMO_CREDITS_NOTE = 'demo credits: first start (gateway.yaml bootstrap)';

/** The operator login the embedded default creates on its first start. */
const BOOTSTRAP_EMAIL = 'admin@localhost';

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
