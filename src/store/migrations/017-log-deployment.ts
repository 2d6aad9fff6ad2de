import type { Migration } from './migration.js';

/*
 * The deployment that served a request (issue 31, docs/routing.md): the name of the
 * provider key (gateway.yaml `providers.<id>.keys[].name`, `default` for a single
 * api_key) in `request_logs.deployment`; NULL with the org's own key (BYOK), for a
 * request no upstream answered, and for rows written before this migration.
 */
export const logDeployment: Migration = {
  version: 17,
  name: 'request_logs.deployment: the provider key that served the request',
  sql: 'ALTER TABLE request_logs ADD COLUMN deployment TEXT;',
};
