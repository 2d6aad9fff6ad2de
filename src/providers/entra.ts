import type { Dispatcher } from 'undici';
import type { EntraCredentials } from './types.js';
import { UpstreamFailure } from './upstream-failure.js';

/** A token is renewed this long before it expires (Entra's last five minutes are not relied on). */
const RENEW_BEFORE_MS = 5 * 60_000;
/** A token request that takes longer than this fails the requests waiting on it. */
const TOKEN_TIMEOUT_MS = 30_000;

/**
 * Microsoft Entra ID bearer tokens by the client-credentials grant (OAuth 2.0 v2
 * endpoint): `POST {token_url}` with client_id, client_secret and scope, answered
 * `{access_token, expires_in}`. One token is kept per provider until shortly before it
 * expires; every request that needs it meanwhile shares it, and the requests that find
 * it stale share one renewal. Created per gateway (by its UpstreamClient), so nothing
 * outlives the gateway. The client secret is only ever sent to the token URL: never
 * logged, never part of an error message.
 */
export class EntraTokenSource {
  private token: { value: string; renewAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly creds: EntraCredentials,
    private readonly dispatcher: Dispatcher,
    private readonly now: () => number,
  ) {}

  /** A valid access token: the cached one, or a fresh one minted once for all callers. */
  async get(): Promise<string> {
    if (this.token && this.now() < this.token.renewAt) return this.token.value;
    this.pending ??= this.mint().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async mint(): Promise<string> {
    const url = new URL(this.creds.tokenUrl);
    const form = new URLSearchParams({
      grant_type: 'client_credentials', client_id: this.creds.clientId, client_secret: this.creds.clientSecret, scope: this.creds.scope,
    });
    let status: number;
    let text: string;
    try {
      const res = await this.dispatcher.request({
        origin: url.origin, path: url.pathname + url.search, method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(), headersTimeout: TOKEN_TIMEOUT_MS, bodyTimeout: TOKEN_TIMEOUT_MS,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new UpstreamFailure('connect_error', `Microsoft Entra token request failed${code ? ` (${code})` : ''}`);
    }
    const body = parse(text);
    if (status >= 500) throw new UpstreamFailure('5xx', `status ${status}`, status, errorBody(`Microsoft Entra token endpoint answered ${status}`));
    const token = typeof body?.access_token === 'string' ? body.access_token : undefined;
    const expiresIn = Number(body?.expires_in);
    if (status >= 400 || !token) {
      // Entra's answer names the fault (invalid_client, unauthorized_client…) and an AADSTS description without the secret.
      const why = [body?.error, body?.error_description].filter((x) => typeof x === 'string').join(': ').split('\r\n')[0] || `status ${status}`;
      throw new UpstreamFailure('4xx', `status ${status}`, 401, errorBody(`Microsoft Entra refused the client credentials of client ${this.creds.clientId}: ${why}`));
    }
    const lifetimeMs = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : 3_600_000;
    this.token = { value: token, renewAt: this.now() + Math.max(lifetimeMs - RENEW_BEFORE_MS, lifetimeMs / 2) };
    return token;
  }
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** An error body in the shape `UpstreamFailure.providerMessage` reads. */
function errorBody(message: string): string {
  return JSON.stringify({ error: { message } });
}
