import { createHash } from 'node:crypto';
import type { ProviderOverride } from '../config/gateway-config.js';
import type { Deployment } from '../model/routing.js';

/** The name of the one deployment of a provider configured with a single `api_key` (or none). */
const DEFAULT_DEPLOYMENT = 'default';

/**
 * The deployments of a provider from its gateway.yaml entry: each of `keys`, or one
 * `default` deployment with the single `api_key` (possibly none: a cloud's own
 * credentials, Entra, or a provider served with BYOK keys only). `problem` reports a
 * mistake at its path under the provider's entry.
 */
export function deploymentsOf(providerId: string, override: ProviderOverride, baseUrl: string, problem: (key: string, message: string) => void): Deployment[] {
  const keys = override.keys;
  if (!keys) return [deployment(providerId, DEFAULT_DEPLOYMENT, override.api_key || undefined, baseUrl, 1, undefined, undefined)];
  // `keys` replace `api_key`: a file that `extends:` the default gateway.yaml (whose providers have an api_key) lists its keys alone.
  if (override.entra) problem('keys', `provider "${providerId}": keys carry api keys; Entra credentials take no keys`);
  const seen = new Set<string>();
  return keys.flatMap((k, i) => {
    if (seen.has(k.name)) {
      problem(`keys/${i}/name`, `provider "${providerId}" has two keys named "${k.name}"`);
      return [];
    }
    seen.add(k.name);
    return [deployment(providerId, k.name, k.api_key || undefined, (k.base_url ?? baseUrl).replace(/\/+$/, ''), k.weight ?? 1, k.rpm, k.tpm)];
  });
}

function deployment(provider: string, name: string, apiKey: string | undefined, baseUrl: string, weight: number, rpm: number | undefined, tpm: number | undefined): Deployment {
  const fingerprint = createHash('sha256').update(`${provider}\n${name}\n${apiKey ?? ''}\n${baseUrl}`).digest('base64url').slice(0, 16);
  return { provider, name, apiKey, baseUrl, weight, rpm, tpm, id: `${provider}/${name}`, fingerprint };
}
