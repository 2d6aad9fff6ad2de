import { PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

/**
 * Opens the store named by `database.url`: `sqlite:<path>` (or `sqlite::memory:`) for one
 * machine, `postgres://user@host:5432/db` (optionally `?schema=name`) for many instances.
 */
export function openStore(url: string, now?: () => number): Store {
  if (url.startsWith('sqlite:')) return new SqliteStore(url.slice('sqlite:'.length), now);
  if (/^postgres(ql)?:\/\//.test(url)) return new PostgresStore(url, now);
  throw new Error(`database url ${url.replace(/\/\/[^@]*@/, '//***@')} is not supported: use sqlite:<path> or postgres://…`);
}
