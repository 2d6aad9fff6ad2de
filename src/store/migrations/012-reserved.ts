import type { Migration } from './index.js';

/*
 * PLACEHOLDER, branch r3-p only: version 12 belongs to another part of issue 32 (built on
 * another branch at the same time). It exists here so that 13 (the audit log) follows an
 * unbroken list; when the branches are merged this file gives way to the real 012.
 */
export const reserved12: Migration = {
  version: 12,
  name: 'reserved (issue 32)',
  sql: 'SELECT 1;',
};
