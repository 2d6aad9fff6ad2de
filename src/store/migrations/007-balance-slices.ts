import type { Migration } from './migration.js';

/*
 * Balance slices (PostgreSQL, many instances): an instance moves a slice of a busy org's
 * balance into its own row here and reserves against it in memory; its charges are written
 * against that row, so requests do not queue on the org's balance row. The row's amount is
 * money taken from the org and not yet charged: at shutdown it goes back to the org, and
 * the reaper returns the rows of an instance that stopped heartbeating (`updated_at`: the
 * last top-up, on the instance's clock, like `reservations.created_at`).
 * SQLite gets the same table, always empty (the server there reserves in memory already).
 */
const SQL = (bigint: string): string => `
CREATE TABLE balance_slices (
  instance_id TEXT NOT NULL,
  org_id TEXT NOT NULL REFERENCES orgs (id),
  amount_micros ${bigint} NOT NULL CHECK (amount_micros >= 0),
  updated_at ${bigint} NOT NULL,
  PRIMARY KEY (instance_id, org_id)
);
CREATE INDEX balance_slices_org ON balance_slices (org_id);
`;

export const balanceSlices: Migration = {
  version: 7,
  name: 'balance slices held by gateway instances',
  sql: { sqlite: SQL('INTEGER'), postgres: SQL('BIGINT') },
};
