import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * The `aws-sigv4` auth scheme (provider file `auth: { scheme: aws-sigv4, service: … }`):
 * every upstream request signed with AWS Signature Version 4 by `@smithy/signature-v4`
 * (the AWS SDK's own signer; no hand-written canonicalisation) for the provider's
 * service and region. Credentials come from gateway.yaml (`providers.<id>.aws`) or,
 * when it names none, from the standard AWS chain (`@aws-sdk/credential-providers`
 * fromNodeProviderChain: environment, shared files, SSO, container and instance
 * roles), cached per gateway and refreshed before they expire. Any provider file may
 * use it; nothing here is Bedrock's.
 */

/** `providers.<id>.aws` in gateway.yaml. */
export interface AwsAuthConfig {
  region?: string;
  access_key_id?: string;
  secret_access_key?: string;
  session_token?: string;
}

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** A request as it will be sent: the signer must see exactly these bytes, this path and these headers. */
export interface SignableRequest {
  method: string;
  /** `https://host[:port]`. */
  origin: string;
  /** Path and query string, as sent (already percent-encoded). */
  path: string;
  headers: Record<string, string>;
  body: string | Buffer | Uint8Array | undefined;
}

/**
 * Signs upstream requests for a provider whose `auth` is a scheme rather than a key
 * header. `key` is the org's own provider key (BYOK) when it has one.
 */
export interface UpstreamSigner {
  /** The headers to send (the request's, plus the signature's); throws an `AuthSchemeError` when no credentials can be had. */
  sign(req: SignableRequest, key: string | undefined): Promise<Record<string, string>>;
}

/** Credentials could not be found or refreshed: reported as the provider refusing them (upstream_unauthorized). */
export class AuthSchemeError extends Error {}

/** SHA-256 (and HMAC-SHA-256 with a secret) over node:crypto, in the Checksum shape the signer takes (as @smithy/hash-node's). */
export class NodeSha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = this.fresh();
  }

  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }

  reset(): void {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    const s = this.secret;
    if (s === undefined) return createHash('sha256');
    const key = typeof s === 'string' ? s : s instanceof ArrayBuffer ? new Uint8Array(s) : new Uint8Array(s.buffer, s.byteOffset, s.byteLength);
    return createHmac('sha256', key);
  }
}

/** How long before their expiry credentials from the chain are fetched again (the AWS SDK's own margin is 5 minutes). */
export const REFRESH_MARGIN_MS = 5 * 60_000;

/**
 * Credentials from a source, kept until `marginMs` before they expire; one fetch serves
 * every request waiting meanwhile. A refresh that fails while the old credentials are
 * still valid keeps them.
 */
export class CredentialCache {
  private current: AwsCredentials | undefined;
  private pending: Promise<AwsCredentials> | undefined;

  constructor(
    private readonly source: () => Promise<AwsCredentials>,
    private readonly now: () => number = Date.now,
    private readonly marginMs = REFRESH_MARGIN_MS,
  ) {}

  async get(): Promise<AwsCredentials> {
    const c = this.current;
    if (c && (c.expiration === undefined || c.expiration.getTime() - this.now() > this.marginMs)) return c;
    this.pending ??= this.source().then((fresh) => {
      this.current = fresh;
      return fresh;
    }).finally(() => {
      this.pending = undefined;
    });
    try {
      return await this.pending;
    } catch (err) {
      if (c?.expiration && c.expiration.getTime() > this.now()) return c;
      throw new AuthSchemeError(`no AWS credentials: ${(err as Error).message}`);
    }
  }
}

/** The region in an AWS endpoint's host name (`bedrock-runtime.us-east-1.amazonaws.com` → `us-east-1`). */
export function regionOfUrl(url: string): string | undefined {
  try {
    return /\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$/.exec(new URL(url).hostname)?.[1];
  } catch {
    return undefined;
  }
}

/**
 * An org's own key for an aws-sigv4 provider: `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`,
 * printable ASCII only (AWS's keys and tokens are): a character no header may hold would
 * otherwise fail the request as a connection error, retried and reported as the provider's failure.
 */
export function credentialsFromKey(key: string): AwsCredentials {
  const [accessKeyId, secretAccessKey, sessionToken, extra] = key.split(':');
  if (!accessKeyId || !secretAccessKey || extra !== undefined || !/^[\x21-\x7e]+$/.test(key)) {
    throw new AuthSchemeError('the provider key is not ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]');
  }
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** The standard AWS chain (environment, shared files, SSO, web identity, container and instance roles), loaded when first needed. */
async function defaultChain(): Promise<() => Promise<AwsCredentials>> {
  const { fromNodeProviderChain } = await import('@aws-sdk/credential-providers');
  const chain = fromNodeProviderChain();
  return () => chain();
}

export interface AwsSignerOptions {
  service: string;
  region: string;
  /** Fixed credentials (gateway.yaml); the standard chain when absent. */
  credentials?: AwsCredentials;
  /** Where chain credentials come from (tests); the AWS default chain when absent. */
  source?: () => Promise<AwsCredentials>;
  now?: () => number;
}

/** Signs each request with SigV4 for one service and region. One per provider and gateway: it holds the credential cache. */
export class AwsSigV4Signer implements UpstreamSigner {
  private readonly cache: CredentialCache;
  private readonly now: () => number;

  constructor(private readonly opts: AwsSignerOptions) {
    this.now = opts.now ?? Date.now;
    const fixed = opts.credentials;
    let chain: (() => Promise<AwsCredentials>) | undefined = opts.source;
    this.cache = new CredentialCache(fixed ? () => Promise.resolve(fixed) : async () => {
      chain ??= await defaultChain();
      return chain();
    }, this.now);
  }

  get region(): string {
    return this.opts.region;
  }

  async sign(req: SignableRequest, key: string | undefined): Promise<Record<string, string>> {
    const credentials = key !== undefined ? credentialsFromKey(key) : await this.cache.get();
    const url = new URL(req.origin + req.path);
    const query: Record<string, string | string[]> = {};
    for (const name of new Set(url.searchParams.keys())) {
      const all = url.searchParams.getAll(name);
      query[name] = all.length === 1 ? (all[0] as string) : all;
    }
    const headers = { ...req.headers, host: url.host };
    // Signing needs the session token only when there is one: an empty one would be sent as an empty header.
    const { accessKeyId, secretAccessKey, sessionToken } = credentials;
    const signer = new SignatureV4({
      service: this.opts.service, region: this.opts.region, sha256: NodeSha256,
      credentials: sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey },
    });
    const signed = await signer.sign({
      method: req.method, protocol: url.protocol, hostname: url.hostname, port: url.port ? Number(url.port) : undefined,
      path: url.pathname, query, headers, body: req.body,
    }, { signingDate: new Date(this.now()) });
    return signed.headers;
  }
}
