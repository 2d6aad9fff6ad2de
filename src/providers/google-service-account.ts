import { sign } from 'node:crypto';
import { parseServiceAccount, type ServiceAccount } from '../config/google-config.js';

export { parseServiceAccount, type ServiceAccount };

/**
 * The `google-service-account` auth scheme: an OAuth 2.0 access token minted from a
 * service account's JSON key (RFC 7523 JWT bearer grant), sent as `Authorization: Bearer`.
 *
 * The assertion is posted to the key file's own `token_uri`, not to a fixed Google URL
 * (google-auth-library's gtoken always posts to https://oauth2.googleapis.com/token),
 * so a key issued for another token endpoint (or the simulator's) works unchanged.
 */

/** The scope Vertex AI (and every Google Cloud API) accepts. */
const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Lifetime asked for in the assertion: Google's maximum. */
const ASSERTION_LIFETIME_S = 3600;
/** A token is replaced this long before it expires (or at three quarters of a shorter life). */
const REFRESH_MARGIN_MS = 5 * 60_000;
/** The longest wait for the token endpoint. */
const TOKEN_TIMEOUT_MS = 30_000;

const b64url = (s: string | Buffer): string => Buffer.from(s).toString('base64url');

/** The signed RS256 JWT assertion for a token request, issued at `nowMs`. */
function jwtAssertion(sa: ServiceAccount, nowMs: number, scope = CLOUD_PLATFORM_SCOPE): string {
  const iat = Math.floor(nowMs / 1000);
  const header = { alg: 'RS256', typ: 'JWT', ...(sa.privateKeyId ? { kid: sa.privateKeyId } : {}) };
  const claims = { iss: sa.clientEmail, scope, aud: sa.tokenUri, iat, exp: iat + ASSERTION_LIFETIME_S };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${input}.${b64url(sign('RSA-SHA256', Buffer.from(input), sa.privateKey))}`;
}

/** Posts a form to a URL; the token source's only I/O (the gateway's undici pool). */
export type FormPoster = (url: string, form: string, signal: AbortSignal) => Promise<{ status: number; text: string }>;

/** Why a token could not be had: `refused` when the endpoint said no (bad key, revoked account), else unreachable. */
export class TokenError extends Error {
  constructor(readonly refused: boolean, message: string) {
    super(message);
  }
}

/**
 * One service account's access token: minted on first use, reused until shortly before
 * it expires, and minted once for every request waiting at that moment (single flight).
 */
export class GoogleTokenSource {
  private token: { value: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;
  /** Token requests sent (for tests and metrics). */
  minted = 0;

  constructor(readonly account: ServiceAccount, private readonly post: FormPoster, private readonly now: () => number = Date.now) {}

  /** A valid access token; `signal` abandons only this caller's wait, not the shared mint. */
  async accessToken(signal?: AbortSignal): Promise<string> {
    if (this.token && this.now() < this.token.refreshAt) return this.token.value;
    this.pending ??= this.mint().finally(() => {
      this.pending = undefined;
    });
    return signal ? abandonable(this.pending, signal) : this.pending;
  }

  /** Forgets the token (the upstream refused it): the next request mints a new one. */
  invalidate(value: string): void {
    if (this.token?.value === value) this.token = undefined;
  }

  private async mint(): Promise<string> {
    const sa = this.account;
    const started = this.now();
    const form = new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion: jwtAssertion(sa, started) }).toString();
    this.minted++;
    let res: { status: number; text: string };
    try {
      res = await this.post(sa.tokenUri, form, AbortSignal.timeout(TOKEN_TIMEOUT_MS));
    } catch (err) {
      throw new TokenError(false, `the token endpoint of ${sa.clientEmail} did not answer (${(err as Error).name})`);
    }
    const body = parseObject(res.text);
    if (res.status !== 200) {
      const what = [body.error, body.error_description].filter((s) => typeof s === 'string' && s !== '').join(': ');
      throw new TokenError(res.status < 500, `Google refused a token for service account ${sa.clientEmail} (status ${res.status}${what ? `, ${what.slice(0, 300)}` : ''})`);
    }
    const value = body.access_token;
    const expiresIn = body.expires_in;
    if (typeof value !== 'string' || value === '' || typeof expiresIn !== 'number' || !(expiresIn > 0)) {
      throw new TokenError(false, `the token endpoint of ${sa.clientEmail} sent no access_token with expires_in`);
    }
    const lifeMs = expiresIn * 1000;
    this.token = { value, refreshAt: started + lifeMs - Math.min(REFRESH_MARGIN_MS, lifeMs / 4) };
    return value;
  }
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function abandonable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new TokenError(false, 'request aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new TokenError(false, 'request aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
