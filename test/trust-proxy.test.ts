import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadGatewayConfig, type GatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';
import { ConfigError } from '../src/config/yaml-file.js';
import { useGateway } from './fixtures.js';
import { tempDir } from './harness.js';
import { Api, code } from './management-helpers.js';

/*
 * Issue 27, finding 6: which client address the sign-in throttle counts. The test client
 * reaches the gateway from 127.0.0.1 and forges `X-Forwarded-For`; only a proxy the
 * operator named (`server.trust_proxy`) may set the address the throttle sees.
 */
const signIn = (api: Api, i: number, forwardedFor: string) =>
  // A different made-up account each time: only the per-address limit (20 a minute) can refuse.
  api.post('/api/v1/session', { email: `nobody-${i}@example.test`, password: 'wrong' }, { 'x-forwarded-for': forwardedFor });

describe('trust_proxy lists proxies that do not include the client', () => {
  const t = useGateway({ yaml: { server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 5000, trust_proxy: ['10.0.0.0/8', '192.0.2.7'] } } });

  it('ignores a forged X-Forwarded-For: the 21st failed sign-in from one address is throttled whatever the header says', async () => {
    const api = new Api(t.url);
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) statuses.push((await signIn(api, i, `198.51.100.${i + 1}`)).status);
    expect(statuses).toEqual([...Array<number>(20).fill(401), 429, 429]);
    const refused = await signIn(api, 99, '203.0.113.9');
    expect(refused.status).toBe(429);
    expect(code(refused)).toBe('login_throttled');
  });
});

describe('trust_proxy lists the client as a proxy', () => {
  const t = useGateway({ yaml: { server: { host: '127.0.0.1', port: 0, shutdown_timeout_ms: 5000, trust_proxy: ['127.0.0.1'] } } });

  it('honours its X-Forwarded-For: each forwarded address is counted on its own', async () => {
    const api = new Api(t.url);
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) statuses.push((await signIn(api, i, `198.51.100.${i + 1}`)).status);
    expect(statuses).toEqual(Array<number>(22).fill(401));
    // One forwarded address past its 20 failures is throttled.
    for (let i = 0; i < 20; i++) await signIn(api, 100 + i, '203.0.113.5');
    expect((await signIn(api, 200, '203.0.113.5')).status).toBe(429);
  });
});

describe('trust_proxy in gateway.yaml', () => {
  it('is refused when an entry is not an address or a range, and a hop count is refused', () => {
    expect(problems({ trust_proxy: ['10.0.0.0/8', '10.0.0.300', '::1/129'] })).toEqual([
      'F:6: /server/trust_proxy/1: 10.0.0.300 is not an IP address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal',
      'F:7: /server/trust_proxy/2: ::1/129 is not an IP address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal',
    ]);
    expect(problems({ trust_proxy: 1 }).join('\n')).toContain('/server/trust_proxy');
  });

  it('keeps false as the default and accepts true (trust everyone) and lists', () => {
    expect(load({}).server.trustProxy).toBe(false);
    expect(load({ trust_proxy: true }).server.trustProxy).toBe(true);
    expect(load({ trust_proxy: ['loopback', '2001:db8::/32', '192.0.2.7'] }).server.trustProxy).toEqual(['loopback', '2001:db8::/32', '192.0.2.7']);
  });
});

function configFile(server: Record<string, unknown>): string {
  const file = join(tempDir('tollgate-tp-'), 'gateway.yaml');
  writeFileSync(file, stringify({ server: { host: '127.0.0.1', port: 0, ...server } }));
  return file;
}

function load(server: Record<string, unknown>): GatewayConfig {
  return loadGatewayConfig(configFile(server), compileSchemas(), {});
}

function problems(server: Record<string, unknown>): string[] {
  const file = configFile(server);
  try {
    loadGatewayConfig(file, compileSchemas(), {});
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message.split('\n').map((l) => l.replace(file, 'F'));
  }
  throw new Error('config was accepted');
}
