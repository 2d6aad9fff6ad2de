import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../lib/ids.js';
import { SecretBox, SecretKeyMissingError } from '../lib/secrets.js';
import { drivers, type DriverEnv } from './drivers.testkit.js';
import { openStore } from './index.js';
import { rawQuery } from './raw.testkit.js';
import type { Org, Store } from './types.js';

const SECRET = 'sk-proj-Zq81mN0pLk2Jh3Gf4Ds5Aa6Ww7Ee8Rr9Tt';

describe.each(drivers)('$name provider keys, encrypted at rest', ({ setup }) => {
  const box = new SecretBox(randomBytes(32));
  let env: DriverEnv | undefined;
  let url: string;
  const opened: Store[] = [];
  const open = (secrets: SecretBox | undefined): Store => {
    const s = openStore(url, undefined, { secrets });
    opened.push(s);
    return s;
  };
  let store: Store;
  const newOrg = (): Promise<Org> => store.createOrg(`org ${newId('t')}`, 0, 'standard');

  beforeAll(async () => {
    env = setup();
    url = env.url('pk');
    store = open(box);
    await store.ping();
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    await env?.teardown();
  });

  it('stores only ciphertext: the raw table reveals no key', async () => {
    const org = await newOrg();
    expect(await store.providerKeys.set(org.id, 'openai', SECRET, 'usr_admin', 1_000)).toEqual({ providerId: 'openai', masked: 'sk-…r9Tt', updatedAt: 1_000, updatedBy: 'usr_admin' });
    const raw = await rawQuery<Record<string, unknown>>(url, 'SELECT * FROM provider_keys WHERE org_id = ?', [org.id]);
    expect(raw).toHaveLength(1);
    expect(raw[0]).toMatchObject({ provider_id: 'openai', key_version: 1, masked: 'sk-…r9Tt' });
    const dump = JSON.stringify(raw);
    expect(dump).not.toContain(SECRET);
    expect(dump).not.toContain(SECRET.slice(8, 30));
    expect(await store.providerKeys.keysOf(org.id)).toEqual(new Map([['openai', SECRET]]));
    expect(await open(box).providerKeys.keysOf(org.id)).toEqual(new Map([['openai', SECRET]]));
  });

  it('replaces, lists (masked) and deletes keys per org', async () => {
    const org = await newOrg();
    const stranger = await newOrg();
    await store.providerKeys.set(org.id, 'openai', 'sk-first-key-of-this-org-0001');
    await store.providerKeys.set(org.id, 'openai', 'sk-second-key-of-this-org-0002');
    await store.providerKeys.set(org.id, 'anthropic', 'short');
    expect((await store.providerKeys.list(org.id)).map((k) => [k.providerId, k.masked])).toEqual([['anthropic', '…'], ['openai', 'sk-…0002']]);
    expect((await store.providerKeys.keysOf(org.id)).get('openai')).toBe('sk-second-key-of-this-org-0002');
    expect(await store.providerKeys.keysOf(stranger.id)).toEqual(new Map());
    expect(await store.providerKeys.delete(stranger.id, 'openai')).toBe(false);
    expect(await store.providerKeys.delete(org.id, 'openai')).toBe(true);
    expect([...(await store.providerKeys.keysOf(org.id)).keys()]).toEqual(['anthropic']);
  });

  it('seals the plaintext rows of a round-1 database, once, and reads them back', async () => {
    const org = await newOrg();
    await rawQuery(url, 'INSERT INTO provider_keys (org_id, provider_id, key, updated_at) VALUES (?, ?, ?, ?)', [org.id, 'groq', 'gsk_plaintext_from_round_one_1234', 5]);
    const sealed = await store.providerKeys.sealPlaintext();
    expect(sealed.sealed).toBe(1);
    const [row] = await rawQuery<{ key: string; key_version: number; masked: string }>(url, 'SELECT key, key_version, masked FROM provider_keys WHERE org_id = ?', [org.id]);
    expect(row).toMatchObject({ key_version: 1, masked: 'gsk…1234' });
    expect(row?.key).not.toContain('plaintext');
    expect(await store.providerKeys.keysOf(org.id)).toEqual(new Map([['groq', 'gsk_plaintext_from_round_one_1234']]));
    expect((await open(box).providerKeys.sealPlaintext()).sealed).toBe(0);
  });

  it('refuses to work without the key, or with another one, naming the fix', async () => {
    const org = await newOrg();
    await store.providerKeys.set(org.id, 'openai', SECRET);
    const keyless = open(undefined);
    await expect(keyless.providerKeys.set(org.id, 'openai', SECRET)).rejects.toBeInstanceOf(SecretKeyMissingError);
    await expect(keyless.providerKeys.keysOf(org.id)).rejects.toThrow(/TOLLGATE_SECRET_KEY/);
    await expect(keyless.providerKeys.sealPlaintext()).rejects.toBeInstanceOf(SecretKeyMissingError);
    await expect(open(new SecretBox(randomBytes(32))).providerKeys.sealPlaintext()).rejects.toThrow(/do not decrypt with the configured secret key/);
    expect((await keyless.providerKeys.list(org.id)).map((k) => k.masked)).toContain('sk-…r9Tt'); // lists need no key
  });

  it("does not open one org's ciphertext copied into another org's row", async () => {
    const [a, b] = [await newOrg(), await newOrg()];
    await store.providerKeys.set(a.id, 'openai', SECRET);
    await store.providerKeys.set(b.id, 'openai', 'sk-b-org-key-000000000000');
    const [fromA] = await rawQuery<{ key: string }>(url, 'SELECT key FROM provider_keys WHERE org_id = ?', [a.id]);
    await rawQuery(url, 'UPDATE provider_keys SET key = ? WHERE org_id = ?', [fromA!.key, b.id]);
    await expect(store.providerKeys.keysOf(b.id)).rejects.toThrow();
    await expect(store.providerKeys.sealPlaintext()).rejects.toThrow(/1 stored provider key\(s\) do not decrypt/);
    await store.providerKeys.delete(b.id, 'openai');
  });
});
