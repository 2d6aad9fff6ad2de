/** Who made a change: a console user (session), one of their management tokens, the CLI, or nobody signed in (a failed sign-in). */
export interface AuditActor {
  type: 'user' | 'token' | 'cli' | 'anonymous';
  /** The user's id (`usr_…`); null for the CLI and for a failed sign-in. */
  userId: string | null;
  /** The user's email, or the email a failed sign-in named. */
  email: string | null;
  /** The management token (`tok_…`) the request carried. */
  tokenId: string | null;
}

/** One change to append: what, to what, by whom, from where, and the fields before and after (secrets already masked). */
export interface AuditEntry {
  action: string;
  orgId: string | null;
  targetType: string | null;
  targetId: string | null;
  actor: AuditActor;
  ip: string | null;
  userAgent: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

export interface AuditRow extends AuditEntry {
  id: string;
  at: number;
}

/** Which rows: every field narrows; `orgId` undefined reads every org (the operator's view). Times in ms, `from` inclusive, `to` exclusive. */
export interface AuditFilter {
  orgId?: string;
  /** A user id, a token id, an email, or `cli`. */
  actor?: string;
  /** An action (`key.update`), or a prefix ending in `.` (`key.`). */
  action?: string;
  /** A target id (`key_…`, `prj_…`, a provider id…). */
  target?: string;
  from?: number;
  to?: number;
}

export interface AuditCursor {
  at: number;
  id: string;
}

/** The audit log: appended to, read in pages, and swept past its retention. Nothing edits a row. */
export interface AuditStore {
  append(entry: AuditEntry, at?: number): Promise<AuditRow>;
  /** Newest first by (at, id); at most `limit` rows after `cursor`. */
  list(filter: AuditFilter, limit: number, cursor?: AuditCursor): Promise<AuditRow[]>;
  /** Deletes the rows older than `before` (ms): the retention sweep, the only delete there is. Returns how many. */
  sweep(before: number): Promise<number>;
}

/** The actor of every CLI command: the machine's shell, no user, no address. */
export const COMMAND_LINE: AuditActor = { type: 'cli', userId: null, email: 'command line', tokenId: null };
