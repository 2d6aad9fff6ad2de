import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSecretBox, maskSecret, SecretBox, secretBoxFor } from './secrets.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const key64 = (): string => randomBytes(32).toString('base64');

describe('SecretBox', () => {
  it('opens what it sealed, only with the same key and context', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('sk-secret', 'org_a:openai');
    expect(sealed).not.toContain('sk-secret');
    expect(box.seal('sk-secret', 'org_a:openai')).not.toBe(sealed); // a fresh IV every time
    expect(box.open(sealed, 'org_a:openai')).toBe('sk-secret');
    expect(() => box.open(sealed, 'org_b:openai')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'org_a:openai')).toThrow();
    const tampered = Buffer.from(sealed, 'base64');
    tampered[tampered.length - 1]! ^= 1;
    expect(() => box.open(tampered.toString('base64'), 'org_a:openai')).toThrow();
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32 bytes/);
  });

  it('masks long secrets to their start and end, short ones entirely', () => {
    expect(maskSecret('sk-abcdefghijklmnop1234')).toBe('sk-…1234');
    expect(maskSecret('sim-key')).toBe('…');
  });
});

describe('where the secret key comes from', () => {
  it('prefers the environment, then the configured file, then the embedded default, which it creates 0600', () => {
    const file = join(dir, 'configured.key');
    writeFileSync(file, `${key64()}\n`);
    const fromEnv = loadSecretBox({ env: { TOLLGATE_SECRET_KEY: key64() }, keyFile: file, defaultKeyFile: join(dir, 'x.key') });
    expect(fromEnv?.source).toBe('TOLLGATE_SECRET_KEY');
    expect(loadSecretBox({ env: {}, keyFile: file, defaultKeyFile: join(dir, 'x.key') })?.source).toBe(file);

    const dflt = join(dir, 'data', 'secret.key');
    const first = loadSecretBox({ env: {}, keyFile: undefined, defaultKeyFile: dflt });
    expect(first).toMatchObject({ source: dflt, created: true });
    expect(statSync(dflt).mode & 0o777).toBe(0o600);
    const again = loadSecretBox({ env: {}, keyFile: undefined, defaultKeyFile: dflt });
    expect(again?.created).toBe(false);
    const sealed = first!.box.seal('x', 'c');
    expect(again!.box.open(sealed, 'c')).toBe('x'); // the same key, read back
    expect(Buffer.from(readFileSync(dflt, 'utf8').trim(), 'base64')).toHaveLength(32);
  });

  it('has none for PostgreSQL without configuration, and refuses a bad key naming its source', () => {
    expect(secretBoxFor({ database: { url: 'postgres://x@h/db' }, secrets: { keyFile: undefined } }, {})).toBeUndefined();
    expect(secretBoxFor({ database: { url: 'sqlite::memory:' }, secrets: { keyFile: undefined } }, {})?.source).toBe('memory');
    expect(secretBoxFor({ database: { url: `sqlite:${join(dir, 'db', 'g.db')}` }, secrets: { keyFile: undefined } }, {})?.source).toBe(join(dir, 'db', 'secret.key'));
    expect(() => loadSecretBox({ env: { TOLLGATE_SECRET_KEY: 'too-short' }, keyFile: undefined, defaultKeyFile: undefined })).toThrow(/TOLLGATE_SECRET_KEY must hold the base64 of 32 bytes/);
    expect(() => loadSecretBox({ env: {}, keyFile: join(dir, 'missing.key'), defaultKeyFile: undefined })).toThrow(/does not exist/);
  });
});
