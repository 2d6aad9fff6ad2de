import { InvalidArgumentError, Option } from 'commander';
import { AmountTooLargeError, parseUsdToMicros } from '../src/lib/money.js';
import type { Invalidator } from '../src/tenancy/invalidation.js';
import type { Store } from '../src/store/types.js';

/*
 * What the commands share: the --config option, amounts, stdin, the store opened on the
 * config's database. Every command file imports this one while the program is built (for
 * `--help` too), so it loads nothing heavy at its top: the config, the store and the
 * invalidation bus are imported when `withStore` runs (./config.ts).
 */

const DEFAULT_CONFIG = 'gateway.yaml';

export const configOption = (): Option => new Option('-c, --config <file>', 'gateway.yaml to use').default(DEFAULT_CONFIG);

/**
 * Runs `fn` on the store of the config's database, beside a running server (SQLite in
 * WAL mode, or PostgreSQL). `secrets`: also load the key that seals provider keys.
 * `invalidation` announces a change to the running instances' caches, over Redis or
 * PostgreSQL as the config says; it connects only when a command announces something.
 */
export async function withStore<T>(file: string, fn: (store: Store, invalidation: Invalidator) => Promise<T>, opts: { secrets?: boolean } = {}): Promise<T> {
  const { loadConfig } = await import('./config.js');
  const config = loadConfig(file);
  const [{ openStore }, { secretBoxFor }, { createInvalidationBus }] = await Promise.all([
    import('../src/store/index.js'), import('../src/lib/secrets.js'), import('../src/tenancy/invalidation.js'),
  ]);
  const store = openStore(config.database.url, undefined, { secrets: opts.secrets ? secretBoxFor(config)?.box : undefined });
  const invalidation = createInvalidationBus({
    databaseUrl: config.database.url, redisUrl: config.redis?.url, redisKeyPrefix: config.redis?.keyPrefix,
    onError: (err, what) => console.error(`warning: ${what} failed (${err.message}); running instances notice within their cache TTL (${config.cache.ttlMs} ms)`),
  });
  try {
    return await fn(store, invalidation);
  } finally {
    await invalidation.close();
    await store.close();
  }
}

/** Reads all of stdin (a password piped in, so it never appears in the shell history or `ps`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** A USD amount argument (credits): refused here, in words, before anything is opened. */
export function usdAmount(value: string): string {
  if (/^\s*-/.test(value)) throw new InvalidArgumentError('must not be negative');
  try {
    parseUsdToMicros(value);
  } catch (err) {
    if (err instanceof AmountTooLargeError) throw new InvalidArgumentError(err.message);
    throw new InvalidArgumentError('must be a USD amount with at most 6 decimals, e.g. 25 or 10.50');
  }
  return value.trim();
}
