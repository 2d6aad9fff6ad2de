import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';
import { packageRoot } from '../src/lib/paths.js';
import { useProviderGateway } from './fixtures.js';
import { logRow } from './harness.js';

/**
 * A local OpenAI-compatible server (Ollama / vLLM) needs no code: providers/ollama.yaml
 * plus examples/ollama.yaml. The simulator's OpenAI-compatible route stands in for the
 * server (examples/ollama.yaml reads the base URL from OLLAMA_BASE_URL).
 */

describe('examples/ollama.yaml', () => {
  it('enables the ollama provider on the server OLLAMA_BASE_URL names (the simulator until then), extending the embedded defaults', () => {
    const file = join(packageRoot(), 'examples', 'ollama.yaml');
    expect(loadGatewayConfig(file, compileSchemas(), {}).providers.ollama).toEqual({ base_url: 'http://127.0.0.1:8790/ollama/v1', api_key: 'ollama' });
    const config = loadGatewayConfig(file, compileSchemas(), { OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1' });
    expect(config.providers.ollama).toEqual({ base_url: 'http://127.0.0.1:11434/v1', api_key: 'ollama' });
    expect(config.providers.openai?.base_url).toBe('http://127.0.0.1:8790/openai/v1');
  });
});

describe('a local OpenAI-compatible server through the gateway', () => {
  const t = useProviderGateway('local-user', '1', 'ollama', (sim) => ({ base_url: `${sim.url}/ollama/v1`, api_key: 'ollama' }));

  it('routes ollama/llama3.2 chat and stream to it, free of charge and logged', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.chat.completions.create({ model: 'ollama/llama3.2', max_tokens: 20, messages: [{ role: 'user', content: 'hi [[sim:tokens=3]]' }] }).withResponse();
    expect(data.choices[0]?.message.content).toBe('This is a');
    expect(t.sim.received().at(-1)).toMatchObject({ route: 'POST /ollama/v1/chat/completions' });
    const stream = await t.client.chat.completions.create({ model: 'llama3.2', max_tokens: 20, messages: [{ role: 'user', content: 'hi [[sim:tokens=3]]' }], stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe('This is a');
    expect(await t.balance(t.orgId)).toBe(before);
    expect(await logRow(t, response.headers.get('x-request-id') ?? '')).toMatchObject({ usedProvider: 'ollama', costMicros: 0, status: 200 });
  });

  it('routes embeddings to it', async () => {
    const r = await t.client.embeddings.create({ model: 'ollama/nomic-embed-text', input: 'hello' });
    expect(r.data[0]?.embedding.length).toBeGreaterThan(0);
    expect(t.sim.received().at(-1)).toMatchObject({ route: 'POST /ollama/v1/embeddings' });
  });
});
