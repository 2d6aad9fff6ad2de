import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SECRET_KEY_ENV = 'TOLLGATE_SECRET_KEY';

/** Thrown where a secret must be sealed or opened and no key is configured. */
export class SecretKeyMissingError extends Error {
  constructor(what: string) {
    super(`${what}: no secret key is configured (set ${SECRET_KEY_ENV} to the base64 of 32 random bytes, or secrets.key_file in gateway.yaml)`);
  }
}

/**
 * AES-256-GCM with a key kept outside the database: a sealed value is
 * base64(iv ‖ tag ‖ ciphertext). `context` (e.g. the org and provider of a key) is
 * authenticated with it, so a sealed value copied into another row does not open.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new RangeError(`the secret key must be ${KEY_BYTES} bytes, got ${key.length}`);
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
  }

  /** The plaintext; throws when the value was sealed with another key or context, or was altered. */
  open(sealed: string, context: string): string {
    const raw = Buffer.from(sealed, 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed value is too short');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/** A 32-byte key from its base64 text; anything else is refused with where it came from. */
function parseSecretKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || key.length !== KEY_BYTES) {
    throw new Error(`${source} must hold the base64 of ${KEY_BYTES} bytes (e.g. from \`openssl rand -base64 32\`)`);
  }
  return key;
}

export interface SecretKeySource {
  env: NodeJS.ProcessEnv;
  /** `secrets.key_file` from gateway.yaml (absolute). */
  keyFile: string | undefined;
  /** Where the embedded default keeps a generated key (beside its SQLite file); none for PostgreSQL. */
  defaultKeyFile: string | undefined;
}

/**
 * The secret key, from (in order) the environment, the configured key file, or the
 * embedded default's own key file, created (mode 0600) on first use. Undefined when
 * none applies (PostgreSQL without a configured key): sealing then fails with
 * SecretKeyMissingError. A configured key file that does not exist is an error, not
 * created: a second instance must not silently make a key of its own.
 */
export function loadSecretBox(src: SecretKeySource): { box: SecretBox; source: string; created: boolean } | undefined {
  const fromEnv = src.env[SECRET_KEY_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return { box: new SecretBox(parseSecretKey(fromEnv, SECRET_KEY_ENV)), source: SECRET_KEY_ENV, created: false };
  if (src.keyFile !== undefined) {
    if (!existsSync(src.keyFile)) throw new Error(`secrets.key_file ${src.keyFile} does not exist`);
    return { box: new SecretBox(parseSecretKey(readFileSync(src.keyFile, 'utf8'), src.keyFile)), source: src.keyFile, created: false };
  }
  if (src.defaultKeyFile === undefined) return undefined;
  const created = createKeyFile(src.defaultKeyFile);
  return { box: new SecretBox(parseSecretKey(readFileSync(src.defaultKeyFile, 'utf8'), src.defaultKeyFile)), source: src.defaultKeyFile, created };
}

/**
 * Writes a new random key unless the file exists. The key is written to a temporary
 * file first and linked into place (link fails if the name exists), so two processes
 * starting at once keep the same key and neither can read a half-written file.
 */
function createKeyFile(file: string): boolean {
  if (existsSync(file)) return false;
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** How a secret is shown in lists: its start and end for long values, nothing of a short one. */
export function maskSecret(secret: string): string {
  return secret.length >= 16 ? `${secret.slice(0, 3)}…${secret.slice(-4)}` : '…';
}

/**
 * The secret box of a gateway.yaml: the environment, `secrets.key_file`, or (embedded
 * default) `secret.key` beside the SQLite file, created on first use. An in-memory
 * SQLite database gets a key as short-lived as its data.
 */
export function secretBoxFor(config: { database: { url: string }; secrets: { keyFile: string | undefined } }, env: NodeJS.ProcessEnv = process.env):
  { box: SecretBox; source: string; created: boolean } | undefined {
  const url = config.database.url;
  if (url === 'sqlite::memory:' && !env[SECRET_KEY_ENV] && config.secrets.keyFile === undefined) {
    return { box: new SecretBox(randomBytes(KEY_BYTES)), source: 'memory', created: true };
  }
  const defaultKeyFile = url.startsWith('sqlite:') ? join(dirname(url.slice('sqlite:'.length)), 'secret.key') : undefined;
  return loadSecretBox({ env, keyFile: config.secrets.keyFile, defaultKeyFile });
}
