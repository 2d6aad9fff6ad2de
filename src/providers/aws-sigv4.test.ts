import { describe, expect, it } from 'vitest';
import { signerFor } from './auth-schemes.js';
import { AuthSchemeError, AwsSigV4Signer, CredentialCache, credentialsFromKey, regionOfUrl, type AwsCredentials } from './aws-sigv4.js';

describe('CredentialCache', () => {
  it('fetches once for concurrent callers and again only within 5 minutes of expiry', async () => {
    let now = 0;
    let fetches = 0;
    const cache = new CredentialCache(async () => {
      fetches++;
      await new Promise((r) => setTimeout(r, 5));
      return { accessKeyId: `AK${fetches}`, secretAccessKey: 's', sessionToken: `tok${fetches}`, expiration: new Date(now + 60 * 60_000) };
    }, () => now);
    const all = await Promise.all(Array.from({ length: 20 }, () => cache.get()));
    expect(new Set(all.map((c) => c.accessKeyId))).toEqual(new Set(['AK1']));
    now += 54 * 60_000;
    expect((await cache.get()).accessKeyId).toBe('AK1');
    now += 2 * 60_000; // 4 minutes left: refreshed
    expect((await cache.get()).accessKeyId).toBe('AK2');
    expect(fetches).toBe(2);
  });

  it('keeps still-valid credentials when a refresh fails, and fails clearly when none are left', async () => {
    let now = 0;
    let fail = false;
    const cache = new CredentialCache(async () => {
      if (fail) throw new Error('Could not load credentials from any providers');
      return { accessKeyId: 'AK', secretAccessKey: 's', expiration: new Date(now + 10 * 60_000) };
    }, () => now);
    await cache.get();
    fail = true;
    now += 6 * 60_000;
    expect((await cache.get()).accessKeyId).toBe('AK');
    now += 5 * 60_000;
    await expect(cache.get()).rejects.toThrow(AuthSchemeError);
    await expect(cache.get()).rejects.toThrow(/no AWS credentials: Could not load credentials/);
  });
});

describe('AwsSigV4Signer', () => {
  const sign = (creds: AwsCredentials | undefined, key?: string, source?: () => Promise<AwsCredentials>) =>
    new AwsSigV4Signer({ service: 'bedrock', region: 'eu-west-3', ...(creds ? { credentials: creds } : {}), ...(source ? { source } : {}), now: () => Date.UTC(2025, 0, 2, 3, 4, 5) })
      .sign({ method: 'POST', origin: 'https://bedrock-runtime.eu-west-3.amazonaws.com', path: '/model/a%3A0/converse', headers: { 'content-type': 'application/json' }, body: '{}' }, key);

  it('signs for the service and region, with the session token when there is one', async () => {
    const h = await sign({ accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'TOKEN' });
    expect(h.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKID\/20250102\/eu-west-3\/bedrock\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*x-amz-security-token/);
    expect(h['x-amz-security-token']).toBe('TOKEN');
    expect(h['x-amz-date']).toBe('20250102T030405Z');
    expect(h.host).toBe('bedrock-runtime.eu-west-3.amazonaws.com');
    expect((await sign({ accessKeyId: 'AKID', secretAccessKey: 'secret' }))['x-amz-security-token']).toBeUndefined();
  });

  it('uses an org\'s own key (ACCESS_KEY_ID:SECRET) over the gateway\'s, and the chain when the config names none', async () => {
    expect((await sign({ accessKeyId: 'AKID', secretAccessKey: 's' }, 'ORGKEY:orgsecret')).authorization).toContain('Credential=ORGKEY/');
    expect((await sign(undefined, undefined, async () => ({ accessKeyId: 'FROMCHAIN', secretAccessKey: 's' }))).authorization).toContain('Credential=FROMCHAIN/');
    expect(() => credentialsFromKey('just-a-key')).toThrow(AuthSchemeError);
    for (const bad of ['AK€:s', 'AK:s\u0000', 'AK:s:t:x', ':s']) expect(() => credentialsFromKey(bad)).toThrow(AuthSchemeError);
    expect(credentialsFromKey('AK:s+/=:tok')).toEqual({ accessKeyId: 'AK', secretAccessKey: 's+/=', sessionToken: 'tok' });
  });
});

describe('aws-sigv4 configuration', () => {
  const raw = { id: 'bedrock', base_url: 'https://bedrock-runtime.ap-south-1.amazonaws.com', auth: { scheme: 'aws-sigv4', service: 'bedrock' } };

  it('finds the region in the config, else the base URL, else AWS_REGION', () => {
    expect(regionOfUrl('https://bedrock-runtime.us-west-2.amazonaws.com')).toBe('us-west-2');
    expect((signerFor(raw, { aws: { region: 'eu-central-1' } }, {}) as AwsSigV4Signer).region).toBe('eu-central-1');
    expect((signerFor(raw, {}, {}) as AwsSigV4Signer).region).toBe('ap-south-1');
    expect((signerFor({ ...raw, base_url: 'http://127.0.0.1:1/bedrock' }, {}, { AWS_REGION: 'sa-east-1' }) as AwsSigV4Signer).region).toBe('sa-east-1');
    expect(signerFor({ ...raw, base_url: 'http://127.0.0.1:1/bedrock' }, {}, {})).toMatch(/no AWS region/);
  });

  it('refuses half a key pair, an aws block on a provider that is not aws-sigv4, and a scheme without its service', () => {
    expect(signerFor(raw, { aws: { access_key_id: 'AK' } }, {})).toMatch(/both access_key_id and secret_access_key/);
    expect(signerFor({ id: 'x', base_url: 'https://x', auth: { header: 'a', format: '{key}' } }, { aws: {} }, {})).toMatch(/not aws-sigv4/);
    expect(signerFor({ ...raw, auth: { scheme: 'aws-sigv4' } }, {}, {})).toMatch(/needs the service/);
    // A key header's header and format are the catalogue's to check; another scheme signs nothing here.
    expect(signerFor({ id: 'x', base_url: 'https://x', auth: { scheme: 'google-service-account' } }, {}, {})).toBeUndefined();
    // A key header needs no signer; its header and format are checked by the catalogue (provider-file.ts: 'auth needs header and format').
    expect(signerFor({ id: 'x', base_url: 'https://x', auth: {} }, {}, {})).toBeUndefined();
  });
});
