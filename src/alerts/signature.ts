import { createHmac, randomBytes } from 'node:crypto';

/** A new webhook secret (`whsec_` + 32 random bytes, base64url), shown once at creation. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * The `x-tollgate-signature` header of a body sent at `unixSeconds`:
 * `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the secret>` (docs/management.md).
 */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}
