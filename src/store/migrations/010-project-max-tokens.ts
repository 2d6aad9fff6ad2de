import type { Migration } from './migration.js';

/*
 * A project's default output bound for chat (issue 29, docs/chat.md "The max_tokens
 * rule"): sent upstream, and reserved for, when a request names none. NULL (every
 * existing project): no default, the spec's behaviour.
 */
export const projectMaxTokens: Migration = {
  version: 10,
  name: 'projects.default_max_tokens',
  sql: 'ALTER TABLE projects ADD COLUMN default_max_tokens INTEGER;',
};
