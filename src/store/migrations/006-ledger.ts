import type { Migration } from './migration.js';

/*
 * A ledger that stays exact across crashes when many instances share PostgreSQL.
 *
 * - Each reservation names the instance that holds it (`instance_id`; NULL for those made
 *   by admin commands or before this migration). Instances heartbeat in `gateway_instances`;
 *   a reaper releases the reservations of an instance whose heartbeat stopped.
 * - A charge is recorded at most once per request (a unique index on the charge rows), so a
 *   settlement applied twice (a spilled one replayed after it had reached the database)
 *   charges once.
 * SQLite gets the same columns (the server there holds its reservations in memory).
 */
const SQL = (bigint: string): string => `
ALTER TABLE reservations ADD COLUMN instance_id TEXT;
CREATE INDEX reservations_instance ON reservations (instance_id);
CREATE TABLE gateway_instances (id TEXT PRIMARY KEY, started_at ${bigint} NOT NULL, heartbeat_at ${bigint} NOT NULL);
CREATE UNIQUE INDEX ledger_one_charge ON ledger (request_id) WHERE kind = 'charge';
`;

export const ledgerSchema: Migration = {
  version: 6,
  name: 'reservations tagged with their instance, instance heartbeats, one charge per request',
  sql: { sqlite: SQL('INTEGER'), postgres: SQL('BIGINT') },
};
