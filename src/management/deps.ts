import type { Invalidator } from '../tenancy/invalidation.js';
import type { Limiter } from '../model/limits.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { Store } from '../store/types.js';
import type { OidcSignIn } from './oidc.js';
import type { LoginThrottle } from './throttle.js';

/** What the management routes use. */
export interface ManagementDeps {
  store: Store;
  catalog: ProviderCatalog;
  now: () => number;
  /** Announces a revoked API key or a changed provider key to every instance's caches. */
  invalidation: Invalidator;
  throttle: LoginThrottle;
  /** The gateway's limits engine: key and project reads show its current counts. */
  limiter: Limiter;
  sessionTtlMs: number;
  /** `webhooks.allow_private_urls`: webhook URLs may point to private and loopback addresses. */
  allowPrivateWebhookUrls: boolean;
  /** A hash no password matches (computed once), verified against for unknown emails. */
  dummyHash: () => Promise<string>;
  /** Single sign-on, when `console.oidc` is set. */
  oidc: OidcSignIn | undefined;
  /** `console.public_url`, without a trailing slash. */
  publicUrl: string | undefined;
}
