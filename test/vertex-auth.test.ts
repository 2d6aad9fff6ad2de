import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson, startTestGateway, tempDir } from './harness.js';
import { serviceAccount, type TestServiceAccount, useVertexGateway } from './vertex-helpers.js';

/**
 * The gateway's Google credentials for Vertex AI: one token for every concurrent request,
 * a revoked account or a project it may not use reported as upstream_unauthorized (naming
 * the account, never its key), nothing charged, and configuration faults caught at boot.
 */
const dir = tempDir();
const chat = (model: string, content = 'hi'): Record<string, unknown> => ({ model, max_tokens: 10, messages: [{ role: 'user', content }] });

describe('a token minted once', () => {
  const { t } = useVertexGateway('vertex-burst', dir);

  it('serves 100 concurrent requests: exactly one call to the token endpoint', async () => {
    const before = t.sim.google.tokenRequests();
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => postJson(`${t.url}/v1/chat/completions`, chat(i % 2 ? 'vertex/gemini-2.5-flash' : 'vertex/claude-haiku-4-5'), t.key)));
    expect(replies.map((r) => r.status)).toEqual(Array.from({ length: 100 }, () => 200));
    expect(t.sim.google.tokenRequests() - before).toBe(1);
  });
});

describe('a revoked service account', () => {
  const { t, account } = useVertexGateway('vertex-revoked', dir);

  it('its cached token refused, then no new one: upstream_unauthorized naming the account, never the key, nothing charged', async () => {
    expect((await postJson(`${t.url}/v1/chat/completions`, chat('vertex/gemini-2.5-flash'), t.key)).status).toBe(200);
    const before = await t.balance(t.orgId);
    const sa = account();
    t.sim.google.disable(sa.email);
    // The token the gateway holds is refused by Vertex (401)...
    const refused = await postJson(`${t.url}/v1/chat/completions`, chat('vertex/gemini-2.5-flash'), t.key);
    expect(refused.status).toBe(502);
    expect((refused.body as ErrorBody).error).toMatchObject({ code: 'upstream_unauthorized', usedProvider: 'vertex' });
    // ...so it is dropped, and the next request's token request is refused (invalid_grant).
    const tokens = t.sim.google.tokenRequests();
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('vertex/claude-haiku-4-5'), t.key);
    expect(t.sim.google.tokenRequests() - tokens).toBe(1);
    expect(r.status).toBe(502);
    const error = (r.body as ErrorBody).error;
    expect(error).toMatchObject({ code: 'upstream_unauthorized', usedProvider: 'vertex', requestedModel: 'vertex/claude-haiku-4-5' });
    expect(error.message).toContain(sa.email);
    expect(error.message).toContain('invalid_grant');
    expect(error.message).not.toContain('PRIVATE KEY');
    expect(JSON.stringify(r.body)).not.toContain(sa.privateKeyPem.split('\n')[1]?.slice(0, 24));
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row.costMicros).toBe(0);
    expect(await t.balance(t.orgId)).toBe(before);
  });
});

describe('a project the account may not use', () => {
  const { t } = useVertexGateway('vertex-403', dir, { project: 'someone-elses' });

  it.each(['vertex/gemini-2.5-flash', 'vertex/claude-haiku-4-5'])('%s: 403 PERMISSION_DENIED → upstream_unauthorized, nothing charged', async (model) => {
    const r = await postJson(`${t.url}/v1/chat/completions`, chat(model), t.key);
    expect(r.status).toBe(502);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'upstream_unauthorized', usedProvider: 'vertex' });
    expect((r.body as ErrorBody).error.message).toContain('aiplatform.endpoints.predict');
    expect(await t.balance(t.orgId)).toBe(5_000_000);
  });
});

describe('no service account configured', () => {
  // The harness points vertex at the simulator without credentials (and the test host has no GOOGLE_APPLICATION_CREDENTIALS).
  const t = useOrgGateway('vertex-none', '5', {}, { ledger: true });

  it('upstream_unauthorized saying what to configure; no request leaves the gateway', async () => {
    t.sim.resetCalls();
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('vertex/gemini-2.5-flash'), t.key);
    expect(r.status).toBe(502);
    expect((r.body as ErrorBody).error.message).toContain('providers.vertex.google.credentials_file');
    expect(t.sim.calls()).toEqual({});
  });

  it('an organization\'s own key is refused, not used (the path\'s project is the gateway\'s)', async () => {
    const { org, key } = await t.org('vertex-byok', '1');
    await t.gateway.store.providerKeys.set(org.id, 'vertex', serviceAccount(t.sim, dir).json);
    const r = await postJson(`${t.url}/v1/chat/completions`, chat('vertex/gemini-2.5-flash'), key);
    expect(r.status).toBe(502);
    expect((r.body as ErrorBody).error.message).toContain("does not take an organization's own key");
  });
});

describe('configuration faults stop the boot', () => {
  it.each([
    ['a missing key file', (sa: TestServiceAccount) => ({ credentials_file: `${sa.file}.gone` }), 'credentials_file'],
    ['a key file that is not a service account', () => ({ credentials_json: '{"type":"authorized_user"}' }), 'credentials_json'],
  ])('%s', async (_name, google, where) => {
    const dir2 = tempDir();
    const { startSimulator } = await import('../simulator/server.js');
    const sim = await startSimulator({ port: 0 });
    try {
      const sa = serviceAccount(sim, dir2);
      const started = startTestGateway({ sim, yaml: { providers: { vertex: { base_url: `${sim.url}/vertex/v1`, google: google(sa) } } } });
      await expect(started).rejects.toThrow(`/providers/vertex/google/${where}`);
    } finally {
      await sim.close();
    }
  });
});
