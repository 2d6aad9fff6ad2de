import type { GatewayConfig } from '../src/config/gateway-config.js';
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
