import type { Migration } from './migration.js';

/*
 * Version 17 belongs to a branch developed alongside the response cache (issue 33, whose
 * migration is 018): this no-op only keeps the list contiguous on the cache's branch. When
 * both branches meet, the other branch's 017 replaces this file.
 */
export const reserved17: Migration = {
  version: 17,
  name: 'reserved (no-op on the response-cache branch)',
  sql: 'SELECT 1;',
};
