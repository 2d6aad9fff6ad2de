import type { Migration } from './migration.js';

/*
 * OIDC sign-in (issue 32, docs/management.md "Single sign-on"): one row per sign-in
 * started at the provider and not yet finished, so that the callback may land on any
 * instance. Keyed by the SHA-256 of the `state` (the state itself travels in the URL and
 * in the browser's flow cookie); the nonce and the PKCE verifier are checked against what
 * the provider returns. A row is taken (deleted) by the one callback that uses it and
 * lives at most ten minutes.
 */
const sql = (bigint: string): string => `
CREATE TABLE oidc_flows (
  state_hash TEXT PRIMARY KEY, nonce TEXT NOT NULL, code_verifier TEXT NOT NULL,
  created_at ${bigint} NOT NULL, expires_at ${bigint} NOT NULL);
CREATE INDEX oidc_flows_expiry ON oidc_flows (expires_at);
`;

export const oidcFlows: Migration = {
  version: 12,
  name: 'oidc sign-in flows',
  sql: { sqlite: sql('INTEGER'), postgres: sql('BIGINT') },
};
