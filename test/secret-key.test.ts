import { randomBytes } from 'node:crypto';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';
import { createGateway, type Gateway } from '../src/gateway.js';
import { selectPlugins } from '../plugins/index.js';
import { startSimulator } from '../simulator/server.js';
import { query } from './cli-helpers.js';
import { expectLedgersExactAt, simulatorOverrides, tempDir } from './harness.js';

/** Where the key that seals provider keys comes from, and what a gateway does when it is missing or wrong. */
const dir = tempDir('tollgate-secret-');
const sim = await startSimulator({ port: 0 });
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

function configFile(name: string, extra: Record<string, unknown> = {}): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, JSON.stringify({
    server: { host: '127.0.0.1', port: 0 }, database: { url: `sqlite:${join(dir, name, 'g.db')}` }, providers_dir: join(process.cwd(), 'providers'),
    providers: simulatorOverrides(sim.url), log: { level: 'silent' }, ...extra,
  }));
  return file;
}

/** Closes a gateway booted from `configFile(name)`, then checks every org's ledger in its database. */
async function closeChecked(g: Gateway, name: string): Promise<void> {
  await g.close();
  await expectLedgersExactAt(`sqlite:${join(dir, name, 'g.db')}`);
}

const boot = (file: string, env: NodeJS.ProcessEnv = {}) => {
  const config = loadGatewayConfig(file, compileSchemas(), { ...process.env, ...env });
  return createGateway({ config, plugins: selectPlugins(config), env: { ...process.env, TOLLGATE_SECRET_KEY: '', ...env } });
};

describe('the secret key of provider keys', () => {
  it('is created beside the embedded database on first start (0600) and reused after', async () => {
    const file = configFile('embedded');
    const g = await boot(file);
    const org = await g.store.createOrg('o', 0, 'standard');
    await g.store.providerKeys.set(org.id, 'openai', 'sk-embedded-0000000000000');
    await closeChecked(g, 'embedded');
    const keyFile = join(dir, 'embedded', 'secret.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const again = await boot(file);
    expect(await again.store.providerKeys.keysOf(org.id)).toEqual(new Map([['openai', 'sk-embedded-0000000000000']]));
    await closeChecked(again, 'embedded');
  });

  it('refuses to start when the stored keys do not decrypt with the configured key, naming the problem', async () => {
    const file = configFile('rotated');
    const first = await boot(file, { TOLLGATE_SECRET_KEY: randomBytes(32).toString('base64') });
    const org = await first.store.createOrg('o', 0, 'standard');
    await first.store.providerKeys.set(org.id, 'openai', 'sk-rotated-00000000000000');
    await closeChecked(first, 'rotated');
    expect(existsSync(join(dir, 'rotated', 'secret.key'))).toBe(false); // the environment's key was used, no file made
    await expect(boot(file, { TOLLGATE_SECRET_KEY: randomBytes(32).toString('base64') })).rejects.toThrow(/do not decrypt with the configured secret key/);
    await expect(boot(file, { TOLLGATE_SECRET_KEY: 'not base64 of 32 bytes' })).rejects.toThrow(/TOLLGATE_SECRET_KEY must hold the base64 of 32 bytes/);
  });

  it('uses secrets.key_file from gateway.yaml, and refuses one that does not exist', async () => {
    const keyFile = join(dir, 'kept-elsewhere.key');
    writeFileSync(keyFile, randomBytes(32).toString('base64'));
    const g = await boot(configFile('filed', { secrets: { key_file: keyFile } }));
    const org = await g.store.createOrg('o', 0, 'standard');
    await g.store.providerKeys.set(org.id, 'groq', 'gsk-filed-000000000000000');
    await closeChecked(g, 'filed');
    expect(JSON.stringify(query(join(dir, 'filed', 'g.db'), 'SELECT * FROM provider_keys'))).not.toContain('gsk-filed');
    await expect(boot(configFile('missing', { secrets: { key_file: join(dir, 'nope.key') } }))).rejects.toThrow(/secrets\.key_file .*nope\.key does not exist/);
  });
});
