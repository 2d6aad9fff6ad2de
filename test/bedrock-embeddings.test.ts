import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { SIM_AWS } from '../simulator/aws-sigv4.js';
import { expectRefusedUncharged, useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * Titan Text Embeddings V2 on Bedrock through the gateway's /v1/embeddings: the official
 * openai client, a SigV4-signed InvokeModel call the simulator verifies, Bedrock's
 * inputTextTokenCount billed at $0.02 per million tokens, the ledger exact after each test.
 */
const t = useOrgGateway('bedrock-embeddings', '5', {}, { ledger: true });
const MODEL = 'bedrock/titan-embed-text-v2';
/** 10,000 characters: 2,500 tokens by the simulator's count (ceil(chars / 4)). */
const LONG = 'Embed me. '.repeat(1000);
const UPSTREAM = `/bedrock/model/${encodeURIComponent('amazon.titan-embed-text-v2:0')}/invoke`;

describe('openai client → bedrock titan-embed-text-v2', () => {
  it('vectors of the asked dimension, Bedrock usage, exact cost, exact ledger', async () => {
    const before = await t.balance(t.orgId);
    const r = await t.client.embeddings.create({ model: MODEL, input: LONG, dimensions: 256 }).withResponse();
    expect(r.data.data).toHaveLength(1);
    expect(r.data.data[0]?.embedding).toHaveLength(256);
    expect(Math.hypot(...r.data.data[0]!.embedding)).toBeCloseTo(1, 4);
    expect(r.data.usage as unknown).toEqual({ prompt_tokens: 2500, total_tokens: 2500, cost: 0.00005 }); // 2,500 × $0.02/M
    expect(before - (await t.balance(t.orgId))).toBe(50);
    const sent = t.sim.received().at(-1)!;
    expect(sent.route).toBe(`POST ${UPSTREAM}`);
    expect(sent.headers.authorization).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${SIM_AWS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request`));
    expect(JSON.parse(sent.body)).toEqual({ inputText: LONG, dimensions: 256 });
    const row = await logRow(t, r.response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ modality: 'embeddings', usedProvider: 'bedrock', costMicros: 50, promptTokens: 2500, costEstimated: false, status: 200 });
  });

  it('1024 dimensions by default, as floats; the token count is Bedrock\'s', async () => {
    const r = await t.client.embeddings.create({ model: MODEL, input: ['The quick brown fox jumps'], encoding_format: 'float' });
    expect(r.data[0]?.embedding).toHaveLength(1024);
    expect(r.usage.prompt_tokens).toBe(7); // the simulator's count of 25 characters, not the gateway's estimate
    expect(JSON.parse(t.sim.received().at(-1)!.body)).toEqual({ inputText: 'The quick brown fox jumps' });
  });

  it('several inputs: a 400 naming input (Titan embeds one text per call), nothing sent, nothing charged', async () => {
    const error = await expectRefusedUncharged(t, '/v1/embeddings', { model: MODEL, input: ['one', 'two'] });
    expect(error).toMatchObject({ code: 'invalid_request', param: 'input' });
    expect(error.message).toContain('at most 1 inputs');
  });

  it('token-id input is refused with 400 before Bedrock is called, and a dimension Bedrock lacks with Bedrock\'s 400; neither is charged', async () => {
    expect((await expectRefusedUncharged(t, '/v1/embeddings', { model: MODEL, input: [1, 2, 3] })).message).toContain('Token-id input is not accepted');
    const before = await t.balance(t.orgId);
    const dims = await postJson(`${t.url}/v1/embeddings`, { model: MODEL, input: 'x', dimensions: 300 }, t.key);
    expect(dims.status).toBe(400);
    expect((dims.body as ErrorBody).error).toMatchObject({ code: 'gateway_error', usedProvider: 'bedrock' });
    expect((dims.body as ErrorBody).error.message).toContain('dimensions');
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('the alias amazon.titan-embed-text-v2:0 reaches it too', async () => {
    const r = await t.client.embeddings.create({ model: 'amazon.titan-embed-text-v2:0', input: 'hi' });
    expect(r.data[0]?.embedding).toHaveLength(1024);
  });
});
