import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

/** Opens the store named by `database.url`: `sqlite:<path>` (or `sqlite::memory:`). */
export function openStore(url: string, now?: () => number): Store {
  if (url.startsWith('sqlite:')) return new SqliteStore(url.slice('sqlite:'.length), now);
  throw new Error(`database url ${url.replace(/\/\/[^@]*@/, '//***@')} is not supported yet: use sqlite:<path>`);
}
