import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { embedText, toFloatList } from '../simulator/vectors.js';
import { expectRefusedUncharged } from './fixtures.js';
import { logRow, postJson, tempDir } from './harness.js';
import { useVertexGateway } from './vertex-helpers.js';

/**
 * Vertex AI text embeddings through the gateway: the openai client's embeddings.create to
 * `vertex/gemini-embedding-001`, sent as `:predict` with the gateway's service-account
 * token, billed from the predictions' statistics.token_count at Vertex's price
 * ($0.15 per million tokens).
 */
const dir = tempDir();
const MODEL = 'vertex/gemini-embedding-001';
const PREDICT = 'POST /vertex/v1/projects/tollgate-test/locations/us-central1/publishers/google/models/gemini-embedding-001:predict';
/** 4,000 characters: 1,000 tokens for the simulator (ceil(chars / 4)), $0.00015 at $0.15/M. */
const TEXT = 'word '.repeat(800);

const { t } = useVertexGateway('vertex-embed', dir);

describe('vertex/gemini-embedding-001 with the openai client', () => {
  it('a string: the vector Vertex made, usage from its token count, charged exactly Vertex\'s price', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.embeddings.create({ model: MODEL, input: TEXT, encoding_format: 'float' }).withResponse();
    expect(data.model).toBe(MODEL);
    expect(data.data).toHaveLength(1);
    expect(data.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    expect(data.data[0]?.embedding).toEqual(toFloatList(embedText(TEXT, 3072)));
    expect(data.usage).toEqual({ prompt_tokens: 1000, total_tokens: 1000, cost: 0.00015 });
    expect(before - (await t.balance(t.orgId))).toBe(150);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ modality: 'embeddings', usedProvider: 'vertex', usedModel: 'gemini-embedding-001', costMicros: 150, costEstimated: false, status: 200 });
    // What left the gateway: Vertex's predict body, with the token minted from the service account.
    const sent = t.sim.received().at(-1);
    expect(sent?.route).toBe(PREDICT);
    expect(JSON.parse(sent?.body ?? '{}')).toEqual({ instances: [{ content: TEXT }], parameters: {} });
    expect(sent?.headers.authorization).toMatch(/^Bearer ya29\.sim-/);
  });

  it('an array of strings (one, Vertex\'s limit for this model) with dimensions, base64 on the wire as the SDK asks', async () => {
    const before = await t.balance(t.orgId);
    const res = await t.client.embeddings.create({ model: MODEL, input: ['short me'], dimensions: 256 });
    expect(res.data.map((d) => d.index)).toEqual([0]);
    const got = res.data[0]?.embedding ?? [];
    const want = Array.from(embedText('short me', 256));
    expect(got).toHaveLength(256);
    got.forEach((v, j) => { expect(v).toBeCloseTo(want[j] ?? NaN, 6); });
    expect(JSON.parse(t.sim.received().at(-1)?.body ?? '{}')).toEqual({ instances: [{ content: 'short me' }], parameters: { outputDimensionality: 256 } });
    const usage = res.usage as typeof res.usage & { cost: number };
    expect(usage.prompt_tokens).toBe(2);
    expect(before - (await t.balance(t.orgId))).toBe(Math.round(usage.cost * 1e6));
  });

  it('two strings: refused before Vertex is called (it takes one instance per request for this model), nothing charged', async () => {
    expect((await expectRefusedUncharged(t, '/v1/embeddings', { model: MODEL, input: ['first text', 'second text'] })).message).toContain('at most 1 inputs');
  });

  it('token-id input: refused with a clear message, nothing sent, nothing charged', async () => {
    expect((await expectRefusedUncharged(t, '/v1/embeddings', { model: MODEL, input: [1, 2, 3] })).message).toContain('Token-id input is not accepted by Vertex AI');
  });
});

describe('embeddings with a revoked service account', () => {
  const { t: r, account } = useVertexGateway('vertex-embed-revoked', dir);

  it('upstream_unauthorized, naming the account, nothing charged', async () => {
    expect((await r.client.embeddings.create({ model: MODEL, input: 'hello' })).data).toHaveLength(1);
    const before = await r.balance(r.orgId);
    const sa = account();
    r.sim.google.disable(sa.email);
    for (let i = 0; i < 2; i++) {
      // First the cached token is refused (401), then the token endpoint refuses the account (invalid_grant).
      const res = await postJson(`${r.url}/v1/embeddings`, { model: MODEL, input: 'hello' }, r.key);
      expect(res.status).toBe(502);
      expect((res.body as ErrorBody).error).toMatchObject({ code: 'upstream_unauthorized', usedProvider: 'vertex', requestedModel: MODEL });
      expect(JSON.stringify(res.body)).not.toContain('PRIVATE KEY');
      expect((await logRow(r, res.headers.get('x-request-id') ?? '')).costMicros).toBe(0);
    }
    expect(await r.balance(r.orgId)).toBe(before);
  });
});
