import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, logRow, tempDir } from './harness.js';

const t = useOrgGateway('nimbus-user', '1', (sim) => {
  const providers = copyProviders(tempDir());
  // A brand-new OpenAI-compatible provider: one YAML file, no code.
  writeFileSync(join(providers, 'nimbus.yaml'), `
id: nimbus
name: Nimbus AI
base_url: ${sim.url}/nimbus/v1
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  chat: { path: /chat/completions, dialect: openai, timeout_ms: 30000 }
models:
  - id: nimbus-large
    upstream_id: nimbus-large-2026-11
    modality: chat
    name: Nimbus Large
    context_length: 32768
    max_output_tokens: 1024
    pricing: { prompt: "0.000003", completion: "0.000009" }
`);
  return { providersDir: providers, yaml: { providers: { nimbus: { api_key: 'nimbus-secret' } } } };
});

describe('a provider added by YAML alone', () => {
  it('serves a completion through the official client, billed at its YAML prices', async () => {
    const { data: res, response } = await t.client.chat.completions.create({ model: 'nimbus-large', messages: [{ role: 'user', content: 'Hello nimbus' }] }).withResponse();
    expect(res.model).toBe('nimbus-large');
    expect(res.choices[0]?.message.content).toBeTruthy();
    expect(t.sim.calls()['POST /nimbus/v1/chat/completions']).toBe(1);
    const u = res.usage as unknown as Record<string, number>;
    const cost = u.prompt_tokens! * 3 + u.completion_tokens! * 9;
    expect(Math.round(u.cost_usd_total! * 1e6)).toBe(cost);
    expect(await t.balance(t.orgId)).toBe(1_000_000 - cost);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'nimbus', usedModel: 'nimbus-large-2026-11', requestedModel: 'nimbus-large' });
  });
});
