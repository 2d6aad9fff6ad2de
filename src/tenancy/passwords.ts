import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/*
 * Console passwords are hashed with scrypt (node's built-in, memory-hard): stored as
 * `scrypt$N$r$p$salt$hash` (base64), so the cost can be raised later and old hashes
 * still verify. N = 2^15, r = 8 costs ~32 MiB and ~50-100 ms per hash on a server core:
 * cheap for a sign-in, slow for an attacker with a stolen database.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 1024;

function derive(password: string, salt: Buffer, opts: ScryptOptions, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, length, { ...opts, maxmem: 128 * opts.N! * opts.r! * 2 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** A problem with a new password, or undefined when it is acceptable. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `a password needs at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `a password has at most ${MAX_PASSWORD_LENGTH} characters`;
  return undefined;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS, KEY_BYTES);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Constant-time comparison; a malformed stored hash never verifies. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const opts = { N: Number(n), r: Number(r), p: Number(p) };
  if (![opts.N, opts.r, opts.p].every((x) => Number.isSafeInteger(x) && x > 0) || expected.length === 0) return false;
  const actual = await derive(password, Buffer.from(salt, 'base64'), opts, expected.length);
  return timingSafeEqual(actual, expected);
}

/**
 * A hash no password matches, verified against when the email is unknown, so that a
 * sign-in takes as long whether or not the account exists.
 */
export async function dummyHash(): Promise<string> {
  return hashPassword(randomBytes(16).toString('hex'));
}
