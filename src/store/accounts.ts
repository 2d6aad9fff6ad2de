import { newId } from '../lib/ids.js';
import { unique, type SqlDb } from './sql.js';
import { SqlSsoStore, type SsoStore } from './sso.js';

/** A role in one organization. Operators (an instance-wide flag on the user) may act as owner in every org. */
import type { OrgRole } from '../model/records.js';

export type { OrgRole };

/** A console user. The password hash never leaves the accounts store except to be verified. */
export interface User {
  id: string;
  /** Lower-cased. */
  email: string;
  operator: boolean;
  /** False while an operator has deactivated the user: no sign-in, no session, no token. */
  active: boolean;
  createdAt: number;
}

export interface Member {
  userId: string;
  email: string;
  role: OrgRole;
  createdAt: number;
  /** False while the user is deactivated (an operator's PATCH /api/v1/users/{user}). */
  active: boolean;
}

export interface MgmtToken {
  id: string;
  userId: string;
  name: string;
  /** `tgm_` + 8 characters: shown in lists, used to find the row. */
  prefix: string;
  /** SHA-256 of the whole token, hex. */
  hash: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** An invitation to join an org with a role, addressed to an email (whether or not a user has it yet). */
export interface Invitation {
  id: string;
  orgId: string;
  orgName: string;
  /** Lower-cased. */
  email: string;
  role: OrgRole;
  /** The user who invited; null when that user is gone. */
  invitedBy: string | null;
  status: 'pending' | 'accepted' | 'declined' | 'revoked';
  createdAt: number;
  expiresAt: number;
}

/** What a membership change did; `last_owner` when it would leave the org without an owner. */
export type MembershipChange = 'ok' | 'not_found' | 'last_owner';

export interface AccountStore {
  /** OIDC sign-in's flows and the operator flag it sets (src/store/sso.ts). */
  readonly sso: SsoStore;
  /** DuplicateError when the email is taken. */
  createUser(email: string, passwordHash: string, operator: boolean): Promise<User>;
  getUser(id: string): Promise<User | undefined>;
  /** With the password hash, for sign-in. */
  findUserByEmail(email: string): Promise<(User & { passwordHash: string }) | undefined>;
  countUsers(): Promise<number>;
  /** Every user, by email (`gateway users list`). */
  listUsers(): Promise<User[]>;

  /** The user's orgs with their role there, by org name. */
  membershipsOf(userId: string): Promise<Array<{ orgId: string; orgName: string; role: OrgRole }>>;
  roleIn(orgId: string, userId: string): Promise<OrgRole | undefined>;
  listMembers(orgId: string): Promise<Member[]>;
  /** DuplicateError when the user is already a member. */
  addMember(orgId: string, userId: string, role: OrgRole): Promise<Member>;
  changeRole(orgId: string, userId: string, role: OrgRole): Promise<MembershipChange>;
  removeMember(orgId: string, userId: string): Promise<MembershipChange>;

  createInvitation(orgId: string, email: string, role: OrgRole, invitedBy: string | null, expiresAt: number): Promise<Invitation>;
  /** Pending, unexpired invitations addressed to this email, newest first. */
  invitationsFor(email: string): Promise<Invitation[]>;
  /** The org's pending, unexpired invitations, newest first. */
  orgInvitations(orgId: string): Promise<Invitation[]>;
  /**
   * Ends a pending, unexpired invitation addressed to `email` (accepted or declined by its
   * invitee), or, with `orgId` instead, one of that org's (revoked). The invitation when it
   * was ended now, undefined otherwise (not theirs, gone, expired or already ended).
   */
  resolveInvitation(id: string, status: 'accepted' | 'declined' | 'revoked', by: { email: string } | { orgId: string }): Promise<Invitation | undefined>;

  /** `id` is the hash of the cookie's secret, never the secret. */
  createSession(id: string, userId: string, expiresAt: number): Promise<void>;
  /** The user of a live session. */
  sessionUser(id: string): Promise<User | undefined>;
  deleteSession(id: string): Promise<void>;
  /** Deletes expired sessions; returns how many. */
  purgeSessions(): Promise<number>;

  createToken(userId: string, name: string, prefix: string, hash: string): Promise<MgmtToken>;
  findToken(prefix: string): Promise<MgmtToken | undefined>;
  listTokens(userId: string): Promise<MgmtToken[]>;
  /** Revokes one of the user's own tokens; undefined when it is not theirs. */
  revokeToken(userId: string, tokenId: string): Promise<MgmtToken | undefined>;
  /** Records a use, at most once a minute per token (no write on most requests). */
  touchToken(id: string): Promise<void>;
}

interface InvitationRow {
  id: string; org_id: string; name: string; email: string; role: OrgRole; invited_by: string | null; status: Invitation['status'];
  created_at: number | string; expires_at: number | string;
}
const toInvitation = (r: InvitationRow): Invitation => ({
  id: r.id, orgId: r.org_id, orgName: r.name, email: r.email, role: r.role, invitedBy: r.invited_by, status: r.status,
  createdAt: Number(r.created_at), expiresAt: Number(r.expires_at),
});
const INVITATION_SELECT = 'SELECT i.*, o.name FROM invitations i JOIN orgs o ON o.id = i.org_id';

interface UserRow { id: string; email: string; password_hash: string; operator: boolean | number; created_at: number; deactivated_at?: number | string | null }
interface TokenRow { id: string; user_id: string; name: string; prefix: string; hash: string; created_at: number; last_used_at: number | null; revoked_at: number | null }

const toUser = (r: UserRow): User => ({
  id: r.id, email: r.email, operator: r.operator === true || r.operator === 1, active: r.deactivated_at == null, createdAt: r.created_at,
});
const toToken = (r: TokenRow): MgmtToken => ({
  id: r.id, userId: r.user_id, name: r.name, prefix: r.prefix, hash: r.hash, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at,
});

/** Keeps at least one owner: the change applies unless it takes the org's last owner away. */
const KEEPS_AN_OWNER = "(role <> 'owner' OR (SELECT COUNT(*) FROM memberships o WHERE o.org_id = ? AND o.role = 'owner') > 1)";

export class SqlAccountStore implements AccountStore {
  readonly sso: SsoStore;

  constructor(private readonly db: SqlDb, private readonly now: () => number) {
    this.sso = new SqlSsoStore(db, now);
  }

  async createUser(email: string, passwordHash: string, operator: boolean): Promise<User> {
    const user: User = { id: newId('usr'), email: email.toLowerCase(), operator, active: true, createdAt: this.now() };
    await unique(() => this.db.run('INSERT INTO users (id, email, password_hash, operator, created_at) VALUES (?, ?, ?, ?, ?)',
      [user.id, user.email, passwordHash, operator, user.createdAt]), `a user with email ${user.email} already exists`);
    return user;
  }

  async getUser(id: string): Promise<User | undefined> {
    const [row] = await this.db.all<UserRow>('SELECT * FROM users WHERE id = ?', [id]);
    return row && toUser(row);
  }

  async findUserByEmail(email: string): Promise<(User & { passwordHash: string }) | undefined> {
    const [row] = await this.db.all<UserRow>('SELECT * FROM users WHERE email = ?', [email.toLowerCase()]);
    return row && { ...toUser(row), passwordHash: row.password_hash };
  }

  async countUsers(): Promise<number> {
    const [row] = await this.db.all<{ n: number }>('SELECT COUNT(*) AS n FROM users');
    return Number(row?.n ?? 0);
  }

  async listUsers(): Promise<User[]> {
    return (await this.db.all<UserRow>('SELECT * FROM users ORDER BY email')).map(toUser);
  }

  async membershipsOf(userId: string): Promise<Array<{ orgId: string; orgName: string; role: OrgRole }>> {
    const rows = await this.db.all<{ org_id: string; name: string; role: OrgRole }>(
      'SELECT m.org_id, o.name, m.role FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? ORDER BY o.name', [userId]);
    return rows.map((r) => ({ orgId: r.org_id, orgName: r.name, role: r.role }));
  }

  async roleIn(orgId: string, userId: string): Promise<OrgRole | undefined> {
    const [row] = await this.db.all<{ role: OrgRole }>('SELECT role FROM memberships WHERE org_id = ? AND user_id = ?', [orgId, userId]);
    return row?.role;
  }

  async listMembers(orgId: string): Promise<Member[]> {
    const rows = await this.db.all<{ user_id: string; email: string; role: OrgRole; created_at: number; deactivated_at: number | null }>(
      'SELECT m.user_id, u.email, m.role, m.created_at, u.deactivated_at FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? ORDER BY u.email', [orgId]);
    return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, createdAt: r.created_at, active: r.deactivated_at == null }));
  }

  async addMember(orgId: string, userId: string, role: OrgRole): Promise<Member> {
    const createdAt = this.now();
    await unique(() => this.db.run('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)', [orgId, userId, role, createdAt]),
      'this user is already a member of the organization');
    const user = await this.getUser(userId);
    return { userId, email: user?.email ?? '', role, createdAt, active: user?.active ?? true };
  }

  async changeRole(orgId: string, userId: string, role: OrgRole): Promise<MembershipChange> {
    if (role === 'owner') {
      if ((await this.db.run('UPDATE memberships SET role = ? WHERE org_id = ? AND user_id = ?', [role, orgId, userId])) > 0) return 'ok';
      return 'not_found';
    }
    return this.keepingAnOwner(orgId, userId, (db) => db.run(`UPDATE memberships SET role = ? WHERE org_id = ? AND user_id = ? AND ${KEEPS_AN_OWNER}`, [role, orgId, userId, orgId]));
  }

  async removeMember(orgId: string, userId: string): Promise<MembershipChange> {
    return this.keepingAnOwner(orgId, userId, (db) => db.run(`DELETE FROM memberships WHERE org_id = ? AND user_id = ? AND ${KEEPS_AN_OWNER}`, [orgId, userId, orgId]));
  }

  /**
   * Runs a change that may take an owner away. SQLite serialises the statement, so its
   * KEEPS_AN_OWNER count is exact. On PostgreSQL (READ COMMITTED) two such statements
   * could each count the other's owner as still there and both commit, leaving none: the
   * org's owner rows are locked first, so concurrent changes take turns and each counts
   * what the previous one left (its statement starts after that commit).
   */
  private async keepingAnOwner(orgId: string, userId: string, write: (db: SqlDb) => Promise<number>): Promise<MembershipChange> {
    const changed = this.db.transaction
      ? await this.db.transaction(async (tx) => {
        await tx.all("SELECT user_id FROM memberships WHERE org_id = ? AND role = 'owner' ORDER BY user_id FOR UPDATE", [orgId]);
        return write(tx);
      })
      : await write(this.db);
    if (changed > 0) return 'ok';
    return (await this.roleIn(orgId, userId)) === undefined ? 'not_found' : 'last_owner';
  }

  async createInvitation(orgId: string, email: string, role: OrgRole, invitedBy: string | null, expiresAt: number): Promise<Invitation> {
    const id = newId('inv');
    await this.db.run('INSERT INTO invitations (id, org_id, email, role, invited_by, status, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [id, orgId, email.toLowerCase(), role, invitedBy, 'pending', this.now(), expiresAt]);
    const [row] = await this.db.all<InvitationRow>(`${INVITATION_SELECT} WHERE i.id = ?`, [id]);
    if (!row) throw new Error(`invitation ${id} disappeared`);
    return toInvitation(row);
  }

  async invitationsFor(email: string): Promise<Invitation[]> {
    const rows = await this.db.all<InvitationRow>(`${INVITATION_SELECT} WHERE i.email = ? AND i.status = 'pending' AND i.expires_at > ? ORDER BY i.created_at DESC, i.id DESC`,
      [email.toLowerCase(), this.now()]);
    return rows.map(toInvitation);
  }

  async orgInvitations(orgId: string): Promise<Invitation[]> {
    const rows = await this.db.all<InvitationRow>(`${INVITATION_SELECT} WHERE i.org_id = ? AND i.status = 'pending' AND i.expires_at > ? ORDER BY i.created_at DESC, i.id DESC`,
      [orgId, this.now()]);
    return rows.map(toInvitation);
  }

  async resolveInvitation(id: string, status: 'accepted' | 'declined' | 'revoked', by: { email: string } | { orgId: string }): Promise<Invitation | undefined> {
    const [column, value] = 'email' in by ? ['email', by.email.toLowerCase()] : ['org_id', by.orgId];
    const now = this.now();
    // One statement: of two concurrent accepts (or an accept and a revoke) only one ends it.
    const changed = await this.db.run(`UPDATE invitations SET status = ?, resolved_at = ? WHERE id = ? AND ${column} = ? AND status = 'pending' AND expires_at > ?`,
      [status, now, id, value, now]);
    if (changed === 0) return undefined;
    const [row] = await this.db.all<InvitationRow>(`${INVITATION_SELECT} WHERE i.id = ?`, [id]);
    return row && toInvitation(row);
  }

  async createSession(id: string, userId: string, expiresAt: number): Promise<void> {
    await this.db.run('INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)', [id, userId, this.now(), expiresAt]);
  }

  async sessionUser(id: string): Promise<User | undefined> {
    const [row] = await this.db.all<UserRow>('SELECT u.* FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ? AND s.expires_at > ? AND u.deactivated_at IS NULL', [id, this.now()]);
    return row && toUser(row);
  }

  async deleteSession(id: string): Promise<void> {
    await this.db.run('DELETE FROM sessions WHERE id = ?', [id]);
  }

  async purgeSessions(): Promise<number> {
    return this.db.run('DELETE FROM sessions WHERE expires_at <= ?', [this.now()]);
  }

  async createToken(userId: string, name: string, prefix: string, hash: string): Promise<MgmtToken> {
    const token: MgmtToken = { id: newId('tok'), userId, name, prefix, hash, createdAt: this.now(), lastUsedAt: null, revokedAt: null };
    await this.db.run('INSERT INTO mgmt_tokens (id, user_id, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      [token.id, userId, name, prefix, hash, token.createdAt]);
    return token;
  }

  async findToken(prefix: string): Promise<MgmtToken | undefined> {
    const [row] = await this.db.all<TokenRow>('SELECT * FROM mgmt_tokens WHERE prefix = ?', [prefix]);
    return row && toToken(row);
  }

  async listTokens(userId: string): Promise<MgmtToken[]> {
    const rows = await this.db.all<TokenRow>('SELECT * FROM mgmt_tokens WHERE user_id = ? ORDER BY created_at DESC, id DESC', [userId]);
    return rows.map(toToken);
  }

  async revokeToken(userId: string, tokenId: string): Promise<MgmtToken | undefined> {
    await this.db.run('UPDATE mgmt_tokens SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL', [this.now(), tokenId, userId]);
    const [row] = await this.db.all<TokenRow>('SELECT * FROM mgmt_tokens WHERE id = ? AND user_id = ?', [tokenId, userId]);
    return row && toToken(row);
  }

  async touchToken(id: string): Promise<void> {
    const now = this.now();
    await this.db.run('UPDATE mgmt_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)', [now, id, now - 60_000]);
  }
}
