import type { Migration } from './migration.js';

/*
 * Invitations to an org (docs/management.md, "Members"). An owner's "add member" no
 * longer adds anyone: it invites an email, and the user with that email joins only by
 * accepting while signed in. The row is by email, so the answer to the owner is the same
 * whether an account with it exists or not.
 */
const sql = (bigint: string): string => `
CREATE TABLE invitations (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), email TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner','admin','member')), invited_by TEXT REFERENCES users(id),
  status TEXT NOT NULL CHECK (status IN ('pending','accepted','declined','revoked')),
  created_at ${bigint} NOT NULL, expires_at ${bigint} NOT NULL, resolved_at ${bigint});
CREATE INDEX invitations_email ON invitations (email, status);
CREATE INDEX invitations_org ON invitations (org_id, status);
`;

export const invitations: Migration = {
  version: 9,
  name: 'invitations to orgs',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
