import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { serviceAccount } from './vertex-helpers.js';
import { tempDir } from './harness.js';
import { GoogleTokenSource, parseServiceAccount, TokenError, type FormPoster } from '../src/providers/google-service-account.js';

/**
 * The token source against the simulator's token endpoint, which verifies the RS256
 * assertion against the account's registered public key, its audience and lifetime.
 */
let sim: Simulator;
let post: FormPoster;
const dir = tempDir();

beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
  post = async (url, form, signal) => {
    const res = await fetch(url, { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' }, signal });
    return { status: res.status, text: await res.text() };
  };
});
afterAll(async () => {
  await sim.close();
});

const sourceFor = (json: string, now?: () => number): GoogleTokenSource => new GoogleTokenSource(parseServiceAccount(json), post, now);

describe('GoogleTokenSource', () => {
  it('mints a token the token endpoint accepts (signed assertion, its own token_uri) and reuses it', async () => {
    const sa = serviceAccount(sim, dir);
    const source = sourceFor(sa.json);
    const before = sim.google.tokenRequests();
    const first = await source.accessToken();
    expect(first).toMatch(/^ya29\.sim-/);
    expect(sim.google.accountOf(first)?.email).toBe(sa.email);
    expect(await source.accessToken()).toBe(first);
    expect(sim.google.tokenRequests() - before).toBe(1);
  });

  it('mints once for 100 concurrent callers (single flight)', async () => {
    const source = sourceFor(serviceAccount(sim, dir).json);
    const before = sim.google.tokenRequests();
    const tokens = await Promise.all(Array.from({ length: 100 }, () => source.accessToken()));
    expect(new Set(tokens).size).toBe(1);
    expect(sim.google.tokenRequests() - before).toBe(1);
  });

  it('replaces a token shortly before it expires, not after', async () => {
    sim.google.tokenTtlSeconds = 100;
    try {
      let now = Date.now();
      const source = sourceFor(serviceAccount(sim, dir).json, () => now);
      const first = await source.accessToken();
      now += 70_000; // 30 s left of 100: still served from the cache
      expect(await source.accessToken()).toBe(first);
      now += 10_000; // 20 s left, under a quarter of its life: replaced
      const second = await source.accessToken();
      expect(second).not.toBe(first);
      expect(source.minted).toBe(2);
    } finally {
      sim.google.tokenTtlSeconds = 3599;
    }
  });

  it('a disabled account is refused (invalid_grant), named by its email, never by its key', async () => {
    const sa = serviceAccount(sim, dir);
    sim.google.disable(sa.email);
    const err = await sourceFor(sa.json).accessToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenError);
    expect((err as TokenError).refused).toBe(true);
    expect((err as TokenError).message).toContain(sa.email);
    expect((err as TokenError).message).toContain('invalid_grant');
    const keyBody = sa.privateKeyPem.split('\n')[1] ?? '';
    expect((err as TokenError).message).not.toContain(keyBody.slice(0, 20));
    expect((err as TokenError).message).not.toContain('PRIVATE KEY');
  });

  it('a key Google never registered for the account fails its signature check', async () => {
    const registered = serviceAccount(sim, dir);
    const other = serviceAccount(sim, dir, { register: false });
    // The registered account's email with another key pair's private key.
    const forged = JSON.stringify({ ...JSON.parse(registered.json) as object, private_key: other.privateKeyPem });
    const err = await sourceFor(forged).accessToken().catch((e: unknown) => e);
    expect((err as TokenError).message).toContain('Invalid JWT Signature');
    expect((err as TokenError).refused).toBe(true);
  });

  it('an unreachable token endpoint is not a refusal (retried as a connection error)', async () => {
    const sa = JSON.parse(serviceAccount(sim, dir).json) as Record<string, unknown>;
    const source = sourceFor(JSON.stringify({ ...sa, token_uri: 'http://127.0.0.1:9/token' }));
    const err = await source.accessToken().catch((e: unknown) => e);
    expect((err as TokenError).refused).toBe(false);
  });
});

describe('parseServiceAccount', () => {
  it.each([
    ['not JSON', 'nope', 'not JSON'],
    ['another credential type', '{"type":"authorized_user"}', 'not "service_account"'],
    ['no email', '{"type":"service_account","private_key":"x"}', 'no client_email'],
    ['a broken key', '{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\\nAAAAsecretbits\\n-----END PRIVATE KEY-----"}', 'not a PEM private key'],
  ])('%s: refused with a message that never holds the key', (_name, text, message) => {
    let caught: Error | undefined;
    try {
      parseServiceAccount(text);
    } catch (err) {
      caught = err as Error;
    }
    expect(caught?.message).toContain(message);
    expect(caught?.message).not.toContain('secretbits');
  });
});
