import type { SecretBox } from '../lib/secrets.js';
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
  /** The key that seals provider keys (src/lib/secrets.ts); without it they can be neither stored nor read. */
  secrets?: SecretBox;
  /** PostgreSQL: `database.*` settings (pool, instance heartbeat window, backstop age, balance slice size) and where ledger faults are reported. */
  postgres?: { poolSize: number; instanceTimeoutMs: number; reservationMaxAgeMs: number; balanceSliceMicros?: number; onError?: (err: unknown, what: string) => void };
}

/**
 * Opens the store named by `database.url`: `sqlite:<path>` (or `sqlite::memory:`) for one
 * machine, `postgres://user@host:5432/db` (optionally `?schema=name`) for many instances.
 */
export function openStore(url: string, now?: () => number, opts: OpenStoreOptions = {}): Store {
  if (url.startsWith('sqlite:')) return new SqliteStore(url.slice('sqlite:'.length), now, { ownLedger: opts.server, secrets: opts.secrets });
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pg = opts.postgres;
    return new PostgresStore(url, now, {
      secrets: opts.secrets, poolSize: pg?.poolSize,
      ledger: opts.server && pg ? {
        instanceTimeoutMs: pg.instanceTimeoutMs, reservationMaxAgeMs: pg.reservationMaxAgeMs, sliceMicros: pg.balanceSliceMicros, onError: pg.onError,
      } : undefined,
    });
  }
  throw new Error(`database url ${url.replace(/\/\/[^@]*@/, '//***@')} is not supported: use sqlite:<path> or postgres://…`);
}
