import type { OrgRole } from '../model/records.js';
import { ConfigError } from './yaml-file.js';

/** `console.oidc` after validation, with defaults applied (docs/management.md, "Single sign-on"). */
export interface OidcSettings {
  /** The provider's issuer URL; its `/.well-known/openid-configuration` is read at the first sign-in. */
  issuer: string;
  clientId: string;
  /** Never logged nor returned by any route. */
  clientSecret: string;
  /** Always includes `openid`. */
  scopes: string[];
  /** The claim holding the user's email (default `email`). */
  emailClaim: string;
  /** The claim holding the user's groups, a list of strings (default `groups`). */
  groupsClaim: string;
  /** Provider group → the org (by name) and role it gives. */
  roleMap: Record<string, { org: string; role: OrgRole }>;
  /** Members of any of these groups are the instance's operators; empty: SSO never changes the operator flag. */
  operatorGroups: string[];
  /** false: only SSO signs in (POST /api/v1/session answers password_login_disabled). */
  allowPasswordLogin: boolean;
}

/** The `console` block of gateway.yaml. `publicUrl`: the gateway's URL as browsers reach it (no trailing slash). */
export interface ConsoleSettings {
  publicUrl: string | undefined;
  oidc: OidcSettings | undefined;
}

export interface RawConsoleConfig {
  public_url?: string;
  oidc?: {
    issuer: string; client_id: string; client_secret: string; scopes?: string[]; email_claim?: string; groups_claim?: string;
    role_map?: Record<string, { org: string; role: OrgRole }>; operator_groups?: string[]; allow_password_login?: boolean;
  };
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The console settings. An issuer must be https, but for one on loopback (a provider
 * on the same host, as in tests and local development): the ID token's keys and the
 * token exchange must not travel in the clear.
 */
export function consoleSettings(raw: RawConsoleConfig | undefined, file: string, lineOf: (pointer: string) => number | undefined): ConsoleSettings {
  const oidc = raw?.oidc;
  if (oidc) {
    const url = new URL(oidc.issuer);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
      throw new ConfigError([{ file, line: lineOf('/console/oidc/issuer'), path: '/console/oidc/issuer', message: `${oidc.issuer}: an issuer must be https (http only on localhost)` }]);
    }
  }
  return {
    publicUrl: raw?.public_url?.replace(/\/+$/, ''),
    oidc: oidc && {
      issuer: oidc.issuer,
      clientId: oidc.client_id,
      clientSecret: oidc.client_secret,
      scopes: [...new Set(['openid', ...(oidc.scopes ?? ['email', 'profile'])])],
      emailClaim: oidc.email_claim ?? 'email',
      groupsClaim: oidc.groups_claim ?? 'groups',
      roleMap: oidc.role_map ?? {},
      operatorGroups: oidc.operator_groups ?? [],
      allowPasswordLogin: oidc.allow_password_login ?? true,
    },
  };
}
