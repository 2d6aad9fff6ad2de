import { PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

export interface OpenStoreOptions {
  /**
   * True for the gateway server: on SQLite it then owns the file's credit ledger
   * (reservations in memory, charges written in batches; a second server process on
   * the same file is refused). Admin commands leave it off and write through.
   */
  server?: boolean;
}

/**
 * Opens the store named by `database.url`: `sqlite:<path>` (or `sqlite::memory:`) for one
 * machine, `postgres://user@host:5432/db` (optionally `?schema=name`) for many instances.
 */
export function openStore(url: string, now?: () => number, opts: OpenStoreOptions = {}): Store {
  if (url.startsWith('sqlite:')) return new SqliteStore(url.slice('sqlite:'.length), now, { ownLedger: opts.server });
  if (/^postgres(ql)?:\/\//.test(url)) return new PostgresStore(url, now);
  throw new Error(`database url ${url.replace(/\/\/[^@]*@/, '//***@')} is not supported: use sqlite:<path> or postgres://…`);
}
