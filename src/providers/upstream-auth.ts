import type { ProviderDef } from './types.js';
import { GoogleTokenSource, TokenError, type FormPoster, type ServiceAccount } from './google-service-account.js';

export { TokenError as AuthFailure } from './google-service-account.js';

/** Service accounts whose tokens are kept; past it the oldest is dropped (and mints again when used). */
const MAX_ACCOUNTS = 1000;

/**
 * Credentials the upstream auth schemes mint (today: Google access tokens), one object
 * per gateway: the tokens live here, not in module state, and every request of the
 * gateway shares them. A provider whose `auth` is a plain header needs nothing here.
 */
export class UpstreamAuth {
  private readonly google = new Map<string, GoogleTokenSource>();

  constructor(private readonly post: FormPoster, private readonly now: () => number = Date.now) {}

  /**
   * The headers that authorize one request to `provider`, or undefined when its auth is
   * a plain key header (the caller writes it). Throws an AuthFailure: `refused` when the
   * credentials were refused or are missing, otherwise the token endpoint was unreachable.
   */
  async headersFor(provider: ProviderDef, apiKey: string | undefined, signal: AbortSignal): Promise<Record<string, string> | undefined> {
    const scheme = provider.auth.scheme;
    if (scheme?.name !== 'google-service-account') return undefined;
    if (apiKey !== undefined) {
      // The account pays for the project in the path, which is the gateway's: an org's own key cannot be honoured (nor ignored, which would bill the gateway).
      throw new TokenError(true, `provider ${provider.id} does not take an organization's own key: its Google service account is the gateway's (gateway.yaml)`);
    }
    if (!scheme.account) throw new TokenError(true, scheme.missing);
    const token = await this.source(scheme.account).accessToken(signal);
    return { authorization: `Bearer ${token}` };
  }

  /** The upstream answered 401 to these headers: its token is dropped, so the next request mints a fresh one. */
  refused(provider: ProviderDef, headers: Record<string, string>): void {
    const scheme = provider.auth.scheme;
    if (scheme?.name !== 'google-service-account' || !scheme.account) return;
    const token = headers.authorization?.replace(/^Bearer /, '');
    if (token) this.google.get(keyOf(scheme.account))?.invalidate(token);
  }

  /** Token requests sent so far for an account (by client_email), across its keys. */
  tokensMinted(clientEmail: string): number {
    let n = 0;
    for (const s of this.google.values()) if (s.account.clientEmail === clientEmail) n += s.minted;
    return n;
  }

  private source(account: ServiceAccount): GoogleTokenSource {
    const key = keyOf(account);
    let source = this.google.get(key);
    if (!source) {
      if (this.google.size >= MAX_ACCOUNTS) this.google.delete(this.google.keys().next().value as string);
      source = new GoogleTokenSource(account, this.post, this.now);
      this.google.set(key, source);
    }
    return source;
  }
}

/** One token cache per key of an account at a token endpoint: a reloaded config with the same key keeps its token. */
const keyOf = (a: ServiceAccount): string => `${a.clientEmail}\n${a.tokenUri}\n${a.fingerprint}`;
