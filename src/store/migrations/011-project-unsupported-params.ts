import type { Migration } from './migration.js';

/*
 * A project's own `unsupported_params` policy for chat (issue 29, docs/chat.md
 * "Unsupported parameters"): over gateway.yaml's and the provider files'. NULL (every
 * existing project): none, the gateway.yaml and YAML policies apply as before.
 */
export const projectUnsupportedParams: Migration = {
  version: 11,
  name: 'projects.unsupported_params',
  sql: "ALTER TABLE projects ADD COLUMN unsupported_params TEXT CHECK (unsupported_params IN ('error', 'drop', 'translate'));",
};
