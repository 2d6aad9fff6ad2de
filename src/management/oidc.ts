import * as client from 'openid-client';
import type { OidcSettings } from '../config/console-config.js';
import { GatewayError } from '../lib/errors.js';
import type { OrgRole } from '../store/accounts.js';
import type { Store } from '../store/types.js';
import { NO_PASSWORD } from '../store/sso.js';
import type { User } from '../store/accounts.js';
import { sha256 } from './credentials.js';

/** How long a sign-in may take at the provider before its flow expires. */
export const FLOW_TTL_MS = 10 * 60 * 1000;
/** The path the provider sends the browser back to (register `<gateway URL>` + this). */
export const CALLBACK_PATH = '/api/v1/session/oidc/callback';

const RANK: Record<OrgRole, number> = { member: 1, admin: 2, owner: 3 };

/**
 * OIDC sign-in with openid-client (authorization code, PKCE S256, state and nonce):
 * one per gateway, holding the provider's discovered metadata once read. The flow's
 * secrets are in the database (any instance may receive the callback), keyed by the
 * hash of the state.
 */
export class OidcSignIn {
  private discovered: Promise<client.Configuration> | undefined;

  constructor(readonly settings: OidcSettings, private readonly store: Store, private readonly now: () => number) {}

  /** The provider's configuration, discovered from the issuer at first use (again after a failure). */
  private configuration(): Promise<client.Configuration> {
    // The ID token's signature is checked against the provider's keys (jwks_uri) even though it comes
    // straight from the token endpoint, where the OIDC spec would let TLS alone vouch for it.
    const execute = this.execute();
    this.discovered ??= client.discovery(new URL(this.settings.issuer), this.settings.clientId, this.settings.clientSecret, undefined, { execute })
      .catch((err: unknown) => {
        this.discovered = undefined;
        throw new GatewayError('sso_failed', [`the provider's discovery document could not be read (${errorText(err)})`]);
      });
    return this.discovered;
  }

  private execute(): Array<(config: client.Configuration) => void> {
    return [client.enableNonRepudiationChecks, ...(new URL(this.settings.issuer).protocol === 'http:' ? [client.allowInsecureRequests] : [])];
  }

  /**
   * The configuration whose clock is the gateway's (`now`, which tests move): the ID token's
   * `exp` and `iat` are judged by the same clock as the flow's expiry. The discovered one when
   * the two clocks agree.
   */
  private async onGatewayClock(): Promise<client.Configuration> {
    const discovered = await this.configuration();
    const skew = Math.round((this.now() - Date.now()) / 1000);
    if (skew === 0) return discovered;
    const config = new client.Configuration(discovered.serverMetadata(), this.settings.clientId, { client_secret: this.settings.clientSecret, [client.clockSkew]: skew });
    for (const feature of this.execute()) feature(config);
    return config;
  }

  /** Starts a sign-in: the provider URL to send the browser to, and the state to bind to this browser. */
  async start(redirectUri: string): Promise<{ url: string; state: string }> {
    const config = await this.configuration();
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    await this.store.accounts.sso.saveFlow(sha256(state), { nonce, codeVerifier, expiresAt: this.now() + FLOW_TTL_MS });
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state };
  }

  /**
   * Finishes a sign-in from the callback's URL (`callbackUrl`: the redirect URI with the
   * query the provider sent): the flow of its state must have been started by this browser
   * (`boundState`, from its flow cookie) and be live; the code is exchanged with the PKCE
   * verifier; openid-client verifies the ID token's signature, issuer, audience, expiry
   * and nonce. Returns the user's email and groups.
   */
  async finish(callbackUrl: URL, boundState: string | undefined): Promise<{ email: string; groups: string[] }> {
    const config = await this.onGatewayClock();
    const state = callbackUrl.searchParams.get('state') ?? '';
    if (state === '' || boundState === undefined || boundState !== state) {
      throw new GatewayError('sso_failed', ['the state does not match a sign-in started from this browser']);
    }
    const flow = await this.store.accounts.sso.takeFlow(sha256(state));
    if (!flow) throw new GatewayError('sso_failed', ['no sign-in with this state is in progress (expired, or already used)']);
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: flow.codeVerifier, expectedState: state, expectedNonce: flow.nonce, idTokenExpected: true });
    } catch (err) {
      throw new GatewayError('sso_failed', [errorText(err)]);
    }
    const idClaims = tokens.claims();
    if (!idClaims) throw new GatewayError('sso_failed', ['the provider returned no ID token']);
    let claims: Record<string, unknown> = { ...idClaims };
    const { emailClaim, groupsClaim } = this.settings;
    if (claims[emailClaim] === undefined || claims[groupsClaim] === undefined) {
      // Providers often put profile claims in the UserInfo answer only; it must be about the ID token's subject.
      try {
        const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
        claims = { ...info, ...claims };
      } catch (err) {
        throw new GatewayError('sso_failed', [`the provider's userinfo could not be read (${errorText(err)})`]);
      }
    }
    const email = claims[emailClaim];
    if (typeof email !== 'string' || !email.includes('@')) throw new GatewayError('sso_failed', [`the claims carry no email in "${emailClaim}"`]);
    if (claims.email_verified === false) throw new GatewayError('sso_failed', [`the provider has not verified the email ${email}`]);
    const raw = claims[groupsClaim];
    const groups = Array.isArray(raw) ? raw.filter((g): g is string => typeof g === 'string') : typeof raw === 'string' ? [raw] : [];
    return { email: email.toLowerCase(), groups };
  }

  /**
   * The user of this email (created now, with no password, on a first sign-in), with
   * their roles in the orgs the role map names set from the groups — added, changed, or
   * removed when no group gives one any more (an org's last owner is kept) — and, when
   * `operator_groups` is set, their operator flag. Orgs the map does not name are left alone.
   */
  async provision(email: string, groups: readonly string[]): Promise<{ user: User; unknownOrgs: string[]; keptLastOwner: string[] }> {
    const accounts = this.store.accounts;
    const inGroup = new Set(groups);
    const operator = this.settings.operatorGroups.length > 0 ? this.settings.operatorGroups.some((g) => inGroup.has(g)) : undefined;
    let user: User | undefined = await accounts.findUserByEmail(email);
    if (!user) {
      try {
        user = await accounts.createUser(email, NO_PASSWORD, operator ?? false);
      } catch (err) {
        user = await accounts.findUserByEmail(email); // two first sign-ins at once: the other created it
        if (!user) throw err;
      }
    }
    // A deactivated account stays out, whatever the provider says (an operator reactivates it).
    if (!user.active) throw new GatewayError('account_deactivated');
    if (operator !== undefined && user.operator !== operator) {
      await accounts.sso.setOperator(user.id, operator);
      user = { ...user, operator };
    }
    const wanted = new Map<string, OrgRole | undefined>();
    for (const [group, { org, role }] of Object.entries(this.settings.roleMap)) {
      const current = wanted.get(org);
      if (!wanted.has(org)) wanted.set(org, undefined);
      if (inGroup.has(group) && (current === undefined || RANK[role] > RANK[current])) wanted.set(org, role);
    }
    const unknownOrgs: string[] = [];
    const keptLastOwner: string[] = [];
    for (const [orgName, role] of wanted) {
      const org = await this.store.findOrgByName(orgName);
      if (!org) {
        unknownOrgs.push(orgName);
        continue;
      }
      const held = await accounts.roleIn(org.id, user.id);
      if (role === held) continue;
      const change = role === undefined ? await accounts.removeMember(org.id, user.id)
        : held === undefined ? await accounts.addMember(org.id, user.id, role).then(() => 'ok' as const)
          : await accounts.changeRole(org.id, user.id, role);
      if (change === 'last_owner') keptLastOwner.push(orgName);
    }
    return { user, unknownOrgs, keptLastOwner };
  }
}

function errorText(err: unknown): string {
  if (err instanceof client.ResponseBodyError) return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  if (err instanceof client.AuthorizationResponseError) return `the provider answered ${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  // openid-client wraps the precise reason (`unexpected ID Token "nonce" claim value`, `JWT signature verification failed`).
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
