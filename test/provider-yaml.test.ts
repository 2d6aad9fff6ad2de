import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { copyProviders, logRow, startOrgGateway, tempDir, type TestGateway } from './harness.js';

let sim: Simulator;
let t: TestGateway;
let orgId: string;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
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
  ({ t, orgId, client } = await startOrgGateway('nimbus-user', '1', { sim, providersDir: providers, yaml: { providers: { nimbus: { api_key: 'nimbus-secret' } } } }));
});
afterAll(async () => {
  await t.close();
  await sim.close();
});

describe('a provider added by YAML alone', () => {
  it('serves a completion through the official client, billed at its YAML prices', async () => {
    const { data: res, response } = await client.chat.completions.create({ model: 'nimbus-large', messages: [{ role: 'user', content: 'Hello nimbus' }] }).withResponse();
    expect(res.model).toBe('nimbus-large');
    expect(res.choices[0]?.message.content).toBeTruthy();
    expect(sim.calls()['POST /nimbus/v1/chat/completions']).toBe(1);
    const u = res.usage as unknown as Record<string, number>;
    const cost = u.prompt_tokens! * 3 + u.completion_tokens! * 9;
    expect(Math.round(u.cost_usd_total! * 1e6)).toBe(cost);
    expect(await t.balance(orgId)).toBe(1_000_000 - cost);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usedProvider: 'nimbus', usedModel: 'nimbus-large-2026-11', requestedModel: 'nimbus-large' });
  });
});
