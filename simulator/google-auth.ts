/**
 * Google's OAuth 2.0 token endpoint for service accounts (RFC 7523 JWT bearer grant),
 * verifying what Google verifies: the assertion's RS256 signature against the account's
 * registered public key, its audience (this endpoint's own URL), a lifetime of at most
 * an hour around now, and that the account exists and is not disabled. It issues
 * short-lived opaque access tokens that the Vertex AI routes (vertex.ts) accept, and
 * nothing else.
 */

import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendJson, type SimRequest } from './http.js';

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Google's allowance for clock skew on iat (inferred; generous enough for any test host). */
const SKEW_S = 300;

export interface ServiceAccountRecord {
  email: string;
  /** The project whose Vertex AI resources the account may call. */
  projectId: string;
  publicKey: KeyObject;
  disabled: boolean;
}

interface IssuedToken {
  email: string;
  expiresAt: number;
}

/** The simulator's service accounts and the tokens it issued (per simulator instance). */
export class GoogleAuthState {
  private readonly accounts = new Map<string, ServiceAccountRecord>();
  private readonly tokens = new Map<string, IssuedToken>();
  private requests = 0;
  /** Lifetime of issued tokens in seconds (Google: 3599). */
  tokenTtlSeconds = 3599;

  constructor(private readonly now: () => number = Date.now) {}

  /** Registers an account and its public key (PEM), as creating a key in IAM does. */
  addServiceAccount(a: { email: string; projectId: string; publicKeyPem: string }): void {
    this.accounts.set(a.email, { email: a.email, projectId: a.projectId, publicKey: createPublicKey(a.publicKeyPem), disabled: false });
  }

  /** Disables the account: its tokens stop working and it gets no new ones (invalid_grant). */
  disable(email: string): void {
    const a = this.accounts.get(email);
    if (a) a.disabled = true;
    for (const [value, t] of this.tokens) if (t.email === email) this.tokens.delete(value);
  }

  /** Token requests received (valid or not), per the whole simulator. */
  tokenRequests(): number {
    return this.requests;
  }

  /** The account behind a live bearer token, or undefined. */
  accountOf(token: string | undefined): ServiceAccountRecord | undefined {
    if (!token) return undefined;
    const t = this.tokens.get(token);
    if (!t) return undefined;
    if (t.expiresAt <= this.now()) {
      this.tokens.delete(token);
      return undefined;
    }
    const a = this.accounts.get(t.email);
    return a && !a.disabled ? a : undefined;
  }

  /** `POST …/oauth2/token`, form-encoded `grant_type` and `assertion`. */
  handleToken(req: SimRequest, res: ServerResponse): void {
    this.requests++;
    const form = new URLSearchParams(req.body.toString('utf8'));
    const fail = (status: number, error: string, description: string): void => sendJson(res, status, { error, error_description: description });
    if (form.get('grant_type') !== JWT_BEARER_GRANT) {
      fail(400, 'unsupported_grant_type', `Invalid grant_type: ${form.get('grant_type') ?? ''}`);
      return;
    }
    const parts = (form.get('assertion') ?? '').split('.');
    const [head, body, signature] = parts;
    const header = parts.length === 3 ? decodeJson(head) : undefined;
    const claims = parts.length === 3 ? decodeJson(body) : undefined;
    if (!header || !claims || signature === undefined) {
      fail(400, 'invalid_grant', 'Invalid JWT: the assertion is not a signed JWT.');
      return;
    }
    if (header.alg !== 'RS256') {
      fail(400, 'invalid_grant', 'Invalid JWT Signature.');
      return;
    }
    const account = typeof claims.iss === 'string' ? this.accounts.get(claims.iss) : undefined;
    if (!account || account.disabled) {
      fail(400, 'invalid_grant', 'Invalid grant: account not found');
      return;
    }
    const signed = verify('RSA-SHA256', Buffer.from(`${head}.${body}`), account.publicKey, Buffer.from(signature, 'base64url'));
    if (!signed) {
      fail(400, 'invalid_grant', 'Invalid JWT Signature.');
      return;
    }
    const audience = `http://${req.headers.host ?? ''}${req.path}`;
    if (claims.aud !== audience) {
      fail(400, 'invalid_grant', `Invalid JWT: Failed audience check. The right audience is ${audience}`);
      return;
    }
    const nowS = Math.floor(this.now() / 1000);
    const { iat, exp } = claims;
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp <= nowS || iat > nowS + SKEW_S || exp - iat > 3600 || exp <= iat) {
      fail(400, 'invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
      return;
    }
    if (typeof claims.scope !== 'string' || claims.scope === '') {
      fail(400, 'invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
      return;
    }
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    this.tokens.set(token, { email: account.email, expiresAt: this.now() + this.tokenTtlSeconds * 1000 });
    sendJson(res, 200, { access_token: token, expires_in: this.tokenTtlSeconds, token_type: 'Bearer' });
  }
}

function decodeJson(part: string | undefined): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
