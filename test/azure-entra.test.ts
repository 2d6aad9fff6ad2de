import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useProviderGateway } from './fixtures.js';
import { startTestGateway } from './harness.js';

/**
 * Azure OpenAI with Microsoft Entra ID client credentials instead of an api-key: the
 * gateway mints a token at the (configurable) token URL, sends it as a bearer token, keeps
 * it until shortly before it expires and mints it once for all concurrent requests. And
 * the config checks of the generic keys Azure uses (api_version, deployments, entra).
 */

const TOKEN_ROUTE = 'POST /tenant-1/oauth2/v2.0/token';

describe('azure with Entra ID client credentials', () => {
  let offsetMs = 0;
  const t = useProviderGateway('entra-user', '5', 'azure', (sim) => ({
    base_url: `${sim.url}/azure/openai`,
    entra: { tenant_id: 'tenant-1', client_id: 'app-1', client_secret: 'sim-secret', token_url: `${sim.url}/{tenant_id}/oauth2/v2.0/token` },
  }), { now: () => Date.now() + offsetMs });
  const ask = () => t.client.chat.completions.create({ model: 'azure/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });

  it('mints one token for 100 concurrent requests and sends it as a bearer token, no api-key', async () => {
    t.sim.resetCalls();
    const replies = await Promise.all(Array.from({ length: 100 }, ask));
    expect(replies.every((r) => r.choices[0]?.message.content)).toBe(true);
    expect(t.sim.calls()[TOKEN_ROUTE]).toBe(1);
    const call = t.sim.received().at(-1)!;
    expect(call.headers.authorization).toMatch(/^Bearer sim-entra-/);
    expect(call.headers['api-key']).toBeUndefined();
  });

  it('keeps the token until shortly before it expires, then mints a new one once', async () => {
    t.sim.resetCalls();
    offsetMs = 50 * 60_000; // 50 minutes on: the 3599 s token is still good
    await ask();
    expect(t.sim.calls()[TOKEN_ROUTE]).toBeUndefined();
    offsetMs = 56 * 60_000; // within its last five minutes: renewed
    await Promise.all([ask(), ask(), ask()]);
    expect(t.sim.calls()[TOKEN_ROUTE]).toBe(1);
    const token = t.sim.received().find((c) => c.route === TOKEN_ROUTE);
    expect(Object.fromEntries(new URLSearchParams(token?.body))).toEqual({
      grant_type: 'client_credentials', client_id: 'app-1', client_secret: 'sim-secret', scope: 'https://cognitiveservices.azure.com/.default',
    });
    offsetMs = 0;
  });
});

describe('azure with an Entra client secret Entra refuses', () => {
  const t = useProviderGateway('entra-bad', '1', 'azure', (sim) => ({
    base_url: `${sim.url}/azure/openai`,
    entra: { tenant_id: 'tenant-1', client_id: 'app-1', client_secret: 'bad-secret-value', token_url: `${sim.url}/tenant-1/oauth2/v2.0/token` },
  }));

  it('answers upstream_unauthorized naming Entra\'s reason, never the secret, and charges nothing', async () => {
    const before = await t.balance(t.orgId);
    const err = await t.client.chat.completions.create({ model: 'azure/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.status).toBe(502);
    expect(apiErr.code).toBe('upstream_unauthorized');
    expect(apiErr.message).toContain('invalid_client');
    expect(apiErr.message).not.toContain('bad-secret-value');
    expect(t.sim.calls()['POST /azure/openai/deployments/gpt-4o-mini/chat/completions']).toBeUndefined();
    expect(await t.balance(t.orgId)).toBe(before);
  });
});

describe('the generic provider keys are checked at load', () => {
  const refused = async (providers: Record<string, unknown>, message: RegExp): Promise<void> => {
    await expect(startTestGateway({ yaml: { providers } })).rejects.toThrow(message);
  };

  it('refuses api_version, deployments and entra on a provider whose file does not use them', async () => {
    await refused({ openai: { api_version: '2024-10-21' } }, /provider "openai" takes no api_version/);
    await refused({ openai: { deployments: { 'gpt-4o': 'x' } } }, /provider "openai" has no \{deployment\}/);
    await refused({ openai: { entra: { tenant_id: 't', client_id: 'c', client_secret: 's' } } }, /provider "openai" does not take Microsoft Entra tokens/);
  });

  it('refuses a deployment for a model Azure does not serve, entra with api_key, and a malformed api_version', async () => {
    await refused({ azure: { deployments: { 'gpt-9': 'x' } } }, /provider "azure" has no model "gpt-9"/);
    await refused({ azure: { api_key: 'k', entra: { tenant_id: 't', client_id: 'c', client_secret: 's' } } }, /give api_key or entra, not both/);
    await refused({ azure: { api_version: 'yesterday' } }, /api_version/);
  });
});
