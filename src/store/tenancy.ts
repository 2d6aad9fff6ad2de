import type { Micros } from '../lib/money.js';
import { newId } from '../lib/ids.js';
import { parseCacheSetting } from '../model/cache-settings.js';
import type { CacheSetting } from '../model/cache.js';
import type { OrgRole } from './accounts.js';
import type { LimitSpec } from '../model/limits.js';
import type { UnsupportedParamsPolicy } from '../providers/types.js';
import { DEFAULT_BODY_LOGGING, type BodyLogging, type GuardrailSpec } from '../model/guardrails.js';
import { LIMIT_COLUMNS, limitsOf, limitValues, type LimitColumns } from './limits-store.js';
import { ORG_COLUMNS, toKey, toOrg, type KeyRow, type OrgRow } from './rows.js';
import { unique, type SqlDb } from './sql.js';
import type { ApiKeyRecord, Org } from '../model/records.js';

/** The name of the project every org has; keys made without a project land there. */
export const DEFAULT_PROJECT = 'default';

/** A project: the console's "workspace", holding API keys; request-log rows are filed under it. */
export interface Project {
  id: string;
  orgId: string;
  name: string;
  createdAt: number;
  /** Limits shared by all the project's keys (docs/limits.md); `{}`: none. */
  limits: LimitSpec;
  /** Chat output bound used when a request names none (docs/chat.md); null: none, the gateway.yaml default applies. */
  defaultMaxTokens: number | null;
  /** Chat `unsupported_params` policy over gateway.yaml's and the provider files' (docs/chat.md); null: none, theirs apply. */
  unsupportedParams: UnsupportedParamsPolicy | null;
  /** The response-cache setting of the project's keys (docs/cache.md); null or absent: off unless a key turns it on. */
  cache?: CacheSetting | null;
  /** The project's guardrails, run in order (docs/guardrails.md); `[]`: none. */
  guardrails: GuardrailSpec[];
  /** Whether and how request and response bodies are logged; off by default. */
  bodyLogging: BodyLogging;
}

export interface ProjectSummary extends Project {
  /** Keys neither revoked nor expired. */
  liveKeys: number;
}

export interface NewApiKey {
  orgId: string;
  projectId: string;
  prefix: string;
  hash: string;
  name: string;
  expiresAt: number | null;
  allowedModels: readonly string[] | null;
  createdBy: string | null;
  /** Limits to create the key with (none when absent). */
  limits?: LimitSpec;
}

/** A key as lists show it: the record with its project's name. */
export interface KeyListItem extends ApiKeyRecord {
  projectName: string;
}

/** One credit entry of the ledger (a top-up or a correction), with who made it. */
export interface CreditEntry {
  id: number;
  amountMicros: Micros;
  note: string | null;
  createdAt: number;
  createdBy: { id: string; email: string } | null;
}

/** An org with the role of the user who listed it (null for an operator who is not a member). */
export interface OrgWithRole {
  org: Org;
  role: OrgRole | null;
}

export interface TenancyStore {
  /** Every org (operator) or the orgs `userId` belongs to, by name. */
  listOrgs(userId: string | null): Promise<OrgWithRole[]>;

  /** A new project, with its limits when given (none otherwise). */
  createProject(orgId: string, name: string, limits?: LimitSpec): Promise<Project>;
  listProjects(orgId: string): Promise<ProjectSummary[]>;
  /** The project with this id in this org (undefined for another org's). */
  getProject(orgId: string, projectId: string): Promise<Project | undefined>;
  findProject(orgId: string, name: string): Promise<Project | undefined>;
  /** Sets (null: clears) the project's default max_tokens; false when the project is not the org's. */
  setProjectDefaultMaxTokens(orgId: string, projectId: string, value: number | null): Promise<boolean>;
  /** Sets (null: clears) the project's `unsupported_params` policy; false when the project is not the org's. */
  setProjectUnsupportedParams(orgId: string, projectId: string, value: UnsupportedParamsPolicy | null): Promise<boolean>;
  /** Sets (null: clears) the response-cache setting of a project or of a key; false when it is not the org's. */
  setCacheSetting(orgId: string, target: 'project' | 'key', id: string, value: CacheSetting | null): Promise<boolean>;
  /** Sets the project's guardrails (`[]`: none) and/or body logging (null: off); false when the project is not the org's. */
  setProjectGuardrails(orgId: string, projectId: string, change: { guardrails?: GuardrailSpec[]; bodyLogging?: BodyLogging | null }): Promise<boolean>;

  /** Undefined when the project is not the org's: nothing is written. */
  createKey(key: NewApiKey): Promise<ApiKeyRecord | undefined>;
  /** The org's keys (or one project's), newest first. */
  listKeys(orgId: string, projectId?: string): Promise<KeyListItem[]>;
  getKey(orgId: string, keyId: string): Promise<KeyListItem | undefined>;
  /** Revokes the org's key (a revoked key keeps its first revocation time); undefined for another org's. */
  revokeKey(orgId: string, keyId: string): Promise<KeyListItem | undefined>;
  /** Sets a key's name (a label: the key itself is unchanged); false for another org's or no key. */
  renameKey(orgId: string, keyId: string, name: string): Promise<boolean>;
  /** Records when keys were last used (the newest time wins); called with each request-log batch. */
  touchKeys(lastUsed: ReadonlyMap<string, number>): Promise<void>;

  /** Credit entries (not charges), newest first; `beforeId` pages on. */
  listCredits(orgId: string, limit: number, beforeId?: number): Promise<CreditEntry[]>;
}

type KeyListRow = KeyRow & { project_name: string };
const KEY_LIST = 'SELECT k.*, p.name AS project_name FROM api_keys k JOIN projects p ON p.id = k.project_id';
const toKeyItem = (r: KeyListRow): KeyListItem => ({ ...toKey(r), projectName: r.project_name });

export class SqlTenancyStore implements TenancyStore {
  constructor(
    private readonly db: SqlDb,
    private readonly now: () => number,
    /**
     * What this process holds of an org's balance (reservations and charges not written, in
     * its memory; 0 elsewhere), and a wait for the moment a read of the stored balance agrees with it.
     */
    private readonly held: { heldFor(orgId: string): Micros; steady(): Promise<void> } = { heldFor: () => 0, steady: async () => undefined },
  ) {}

  async listOrgs(userId: string | null): Promise<OrgWithRole[]> {
    await this.held.steady();
    const rows = userId === null
      ? await this.db.all<OrgRow & { role: null }>(`SELECT ${ORG_COLUMNS}, NULL AS role FROM orgs o ORDER BY o.name`)
      : await this.db.all<OrgRow & { role: OrgRole }>(`SELECT ${ORG_COLUMNS}, m.role FROM orgs o JOIN memberships m ON m.org_id = o.id WHERE m.user_id = ? ORDER BY o.name`, [userId]);
    return rows.map((r) => {
      const org = toOrg(r);
      org.balanceMicros -= this.held.heldFor(org.id);
      return { org, role: r.role };
    });
  }

  async createProject(orgId: string, name: string, limits: LimitSpec = {}): Promise<Project> {
    const project: Project = { id: newId('prj'), orgId, name, createdAt: this.now(), limits, defaultMaxTokens: null, unsupportedParams: null,
      cache: null, guardrails: [], bodyLogging: DEFAULT_BODY_LOGGING };
    await unique(() => this.db.run(`INSERT INTO projects (id, org_id, name, created_at, ${LIMIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [project.id, orgId, name, project.createdAt, ...limitValues(limits)]),
    `a project named "${name}" already exists in this organization`);
    return project;
  }

  async listProjects(orgId: string): Promise<ProjectSummary[]> {
    const rows = await this.db.all<ProjectRow & { live_keys: number }>(`SELECT p.*, (SELECT COUNT(*) FROM api_keys k WHERE k.project_id = p.id
        AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)) AS live_keys
      FROM projects p WHERE p.org_id = ? ORDER BY p.created_at, p.name`, [this.now(), orgId]);
    return rows.map((r) => ({ ...toProject(r), liveKeys: Number(r.live_keys) }));
  }

  async getProject(orgId: string, projectId: string): Promise<Project | undefined> {
    const [row] = await this.db.all<ProjectRow>('SELECT * FROM projects WHERE id = ? AND org_id = ?', [projectId, orgId]);
    return row && toProject(row);
  }

  async findProject(orgId: string, name: string): Promise<Project | undefined> {
    const [row] = await this.db.all<ProjectRow>('SELECT * FROM projects WHERE org_id = ? AND name = ?', [orgId, name]);
    return row && toProject(row);
  }

  async setProjectDefaultMaxTokens(orgId: string, projectId: string, value: number | null): Promise<boolean> {
    return (await this.db.run('UPDATE projects SET default_max_tokens = ? WHERE id = ? AND org_id = ?', [value, projectId, orgId])) > 0;
  }

  async setProjectUnsupportedParams(orgId: string, projectId: string, value: UnsupportedParamsPolicy | null): Promise<boolean> {
    return (await this.db.run('UPDATE projects SET unsupported_params = ? WHERE id = ? AND org_id = ?', [value, projectId, orgId])) > 0;
  }

  async setCacheSetting(orgId: string, target: 'project' | 'key', id: string, value: CacheSetting | null): Promise<boolean> {
    const table = target === 'project' ? 'projects' : 'api_keys';
    return (await this.db.run(`UPDATE ${table} SET cache = ? WHERE id = ? AND org_id = ?`, [value === null ? null : JSON.stringify(value), id, orgId])) > 0;
  }

  async setProjectGuardrails(orgId: string, projectId: string, change: { guardrails?: GuardrailSpec[]; bodyLogging?: BodyLogging | null }): Promise<boolean> {
    const sets: string[] = [];
    const values: Array<string | null> = [];
    if (change.guardrails !== undefined) {
      sets.push('guardrails = ?');
      values.push(change.guardrails.length > 0 ? JSON.stringify(change.guardrails) : null);
    }
    if (change.bodyLogging !== undefined) {
      sets.push('body_logging = ?');
      values.push(change.bodyLogging && change.bodyLogging.mode !== 'off' ? JSON.stringify(change.bodyLogging) : null);
    }
    if (sets.length === 0) return (await this.getProject(orgId, projectId)) !== undefined;
    return (await this.db.run(`UPDATE projects SET ${sets.join(', ')} WHERE id = ? AND org_id = ?`, [...values, projectId, orgId])) > 0;
  }

  async createKey(k: NewApiKey): Promise<ApiKeyRecord | undefined> {
    const id = newId('key');
    const createdAt = this.now();
    const models = k.allowedModels === null ? null : JSON.stringify(k.allowedModels);
    // The project check is in the statement itself: a project of another org inserts nothing.
    const [row] = await this.db.all<KeyRow>(`INSERT INTO api_keys (id, org_id, project_id, prefix, hash, name, created_at, expires_at, allowed_models, created_by,
        ${LIMIT_COLUMNS})
      SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM projects WHERE id = ? AND org_id = ? RETURNING *`,
    [id, k.orgId, k.projectId, k.prefix, k.hash, k.name, createdAt, k.expiresAt, models, k.createdBy, ...limitValues(k.limits ?? {}), k.projectId, k.orgId]);
    return row && toKey(row);
  }

  async listKeys(orgId: string, projectId?: string): Promise<KeyListItem[]> {
    const rows = projectId === undefined
      ? await this.db.all<KeyListRow>(`${KEY_LIST} WHERE k.org_id = ? ORDER BY k.created_at DESC, k.id DESC`, [orgId])
      : await this.db.all<KeyListRow>(`${KEY_LIST} WHERE k.org_id = ? AND k.project_id = ? ORDER BY k.created_at DESC, k.id DESC`, [orgId, projectId]);
    return rows.map(toKeyItem);
  }

  async getKey(orgId: string, keyId: string): Promise<KeyListItem | undefined> {
    const [row] = await this.db.all<KeyListRow>(`${KEY_LIST} WHERE k.org_id = ? AND k.id = ?`, [orgId, keyId]);
    return row && toKeyItem(row);
  }

  async revokeKey(orgId: string, keyId: string): Promise<KeyListItem | undefined> {
    await this.db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND org_id = ? AND revoked_at IS NULL', [this.now(), keyId, orgId]);
    return this.getKey(orgId, keyId);
  }

  async renameKey(orgId: string, keyId: string, name: string): Promise<boolean> {
    return (await this.db.run('UPDATE api_keys SET name = ? WHERE id = ? AND org_id = ?', [name, keyId, orgId])) > 0;
  }

  async touchKeys(lastUsed: ReadonlyMap<string, number>): Promise<void> {
    if (lastUsed.size === 0) return;
    if (this.db.dialect === 'postgres') {
      await this.db.run(`UPDATE api_keys k SET last_used_at = GREATEST(COALESCE(k.last_used_at, 0), u.at)
        FROM unnest(?::text[], ?::bigint[]) AS u(id, at) WHERE k.id = u.id`, [[...lastUsed.keys()], [...lastUsed.values()]]);
      return;
    }
    await this.db.runMany('UPDATE api_keys SET last_used_at = MAX(COALESCE(last_used_at, 0), ?) WHERE id = ?',
      [...lastUsed].map(([id, at]) => [at, id]));
  }

  async listCredits(orgId: string, limit: number, beforeId?: number): Promise<CreditEntry[]> {
    const rows = await this.db.all<{ id: number; amount_micros: number; note: string | null; created_at: number; created_by: string | null; email: string | null }>(
      `SELECT l.id, l.amount_micros, l.note, l.created_at, l.created_by, u.email FROM ledger l LEFT JOIN users u ON u.id = l.created_by
        WHERE l.org_id = ? AND l.kind = 'credit' AND l.id < ? ORDER BY l.id DESC LIMIT ?`,
      [orgId, beforeId ?? Number.MAX_SAFE_INTEGER, limit]);
    return rows.map((r) => ({
      id: Number(r.id), amountMicros: r.amount_micros, note: r.note, createdAt: r.created_at,
      createdBy: r.created_by && r.email ? { id: r.created_by, email: r.email } : null,
    }));
  }
}

interface ProjectRow extends LimitColumns {
  id: string; org_id: string; name: string; created_at: number; default_max_tokens: number | null; unsupported_params: UnsupportedParamsPolicy | null;
  cache?: unknown;
  guardrails?: string | null; body_logging?: string | null;
}
const toProject = (r: ProjectRow): Project => ({
  id: r.id, orgId: r.org_id, name: r.name, createdAt: r.created_at, limits: limitsOf(r),
  defaultMaxTokens: r.default_max_tokens === null ? null : Number(r.default_max_tokens),
  unsupportedParams: r.unsupported_params ?? null,
  cache: parseCacheSetting(r.cache),
  guardrails: r.guardrails ? (JSON.parse(r.guardrails) as GuardrailSpec[]) : [],
  bodyLogging: r.body_logging ? { ...DEFAULT_BODY_LOGGING, ...(JSON.parse(r.body_logging) as Partial<BodyLogging>) } : DEFAULT_BODY_LOGGING,
});
