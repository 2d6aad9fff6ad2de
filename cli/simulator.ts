import type { GatewayConfig } from '../src/config/gateway-config.js';
import type { ProviderCatalog } from '../src/providers/catalog.js';
import { startSimulator } from '../simulator/server.js';

/** The message for a port another program holds: which setting chose it and how to pick another. */
export function portInUse(err: unknown, what: string, address: string, setting: string, flag: string, file: string): Error {
  if ((err as { code?: string }).code !== 'EADDRINUSE') return err as Error;
  return new Error(`${what} cannot listen on ${address}: ${address} is in use. Choose another port with ${setting} in ${file} or ${flag} N (0 = any free port), or stop what holds it.`);
}

/**
 * Starts the simulator gateway.yaml enables, on `port` (else `simulator.port`), and
 * returns the config with every provider `base_url` override that points at the
 * simulator's configured address moved to the port it really got: with
 * `--simulator-port` or `simulator.port: 0` the providers follow the simulator.
 */
export async function startConfiguredSimulator(config: GatewayConfig, port: number | undefined): Promise<{ config: GatewayConfig; url: string | undefined }> {
  if (!config.simulator) return { config, url: undefined };
  const configured = config.simulator.port;
  const wanted = port ?? configured;
  let url: string;
  try {
    url = (await startSimulator({ port: wanted })).url;
  } catch (err) {
    throw portInUse(err, 'The provider simulator', `127.0.0.1:${wanted}`, 'simulator.port', '--simulator-port', config.file);
  }
  const origins = [`http://127.0.0.1:${configured}`, `http://localhost:${configured}`];
  const follow = (base: string | undefined): string | undefined => {
    const origin = origins.find((o) => base === o || base?.startsWith(`${o}/`));
    return origin === undefined || base === undefined ? base : url + base.slice(origin.length);
  };
  const providers = Object.fromEntries(Object.entries(config.providers).map(([id, o]) => [id, { ...o, base_url: follow(o.base_url) }]));
  return { config: { ...config, providers, simulator: { port: Number(new URL(url).port) } }, url };
}

/** The simulator addresses a provider base_url may name in this config (none when the simulator is off). */
function simulatorOrigins(config: GatewayConfig): string[] {
  if (!config.simulator) return [];
  return [`http://127.0.0.1:${config.simulator.port}`, `http://localhost:${config.simulator.port}`];
}

/**
 * Where each provider's requests go, for `gateway validate`: which ones the built-in
 * simulator answers and which go to a real host — and, as warnings, real hosts the
 * gateway has no key for (every such request would be refused upstream).
 */
export function describeUpstreams(config: GatewayConfig, catalog: ProviderCatalog): { lines: string[]; warnings: string[] } {
  const origins = simulatorOrigins(config);
  const simulated: string[] = [];
  const real: string[] = [];
  const warnings: string[] = [];
  for (const p of catalog.providers.values()) {
    if (origins.includes(new URL(p.baseUrl).origin)) {
      simulated.push(p.id);
      continue;
    }
    real.push(`${p.id} (${p.baseUrl})`);
    // A provider that signs its requests (aws-sigv4) finds its credentials itself (gateway.yaml or the AWS chain).
    if (p.auth.scheme) {
      if (!p.auth.scheme.account) warnings.push(`warning: ${p.auth.scheme.missing}`);
    } else if (!p.apiKey && !p.signer && !(p.deployments ?? []).some((d) => d.apiKey)) warnings.push(`warning: provider ${p.id} sends its requests to ${p.baseUrl} with no api_key: they will be refused there; set providers.${p.id}.api_key (e.g. "\${env:${p.id.toUpperCase().replace(/-/g, '_')}_API_KEY}") or point its base_url at the simulator`);
  }
  const lines: string[] = [];
  if (simulated.length > 0) lines.push(`on the built-in simulator (${origins[0] ?? ''}): ${simulated.join(', ')}`);
  if (real.length > 0) lines.push(`on real hosts: ${real.join(', ')}`);
  return { lines, warnings };
}
