import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { embedText, toFloatList } from '../simulator/vectors.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

const t = useOrgGateway('embedder', '5', {}, { ledger: true });

/** 10,000 characters: 2,500 tokens for the simulator and for the gateway's estimate alike. */
const LONG = 'word '.repeat(2000);

const decode = (b64: string): number[] => {
  const buf = Buffer.from(b64, 'base64');
  return Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
};

describe('POST /v1/embeddings with OpenAI models and the official openai client', () => {
  it('returns float vectors exactly as the upstream made them, with usage and cost, billed exactly', async () => {
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.embeddings.create({ model: 'text-embedding-3-small', input: LONG, encoding_format: 'float' }).withResponse();
    expect(data.object).toBe('list');
    expect(data.model).toBe('text-embedding-3-small');
    expect(data.data).toHaveLength(1);
    expect(data.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    expect(data.data[0]?.embedding).toEqual(toFloatList(embedText(LONG, 1536)));
    const usage = data.usage as unknown as { prompt_tokens: number; total_tokens: number; cost: number };
    expect(usage).toEqual({ prompt_tokens: 2500, total_tokens: 2500, cost: 0.00005 }); // 2,500 × $0.02/M
    expect(before - (await t.balance(t.orgId))).toBe(50);
    const id = response.headers.get('x-request-id') ?? '';
    expect((data as unknown as { id: string }).id).toBe(id);
    expect(await logRow(t, id)).toMatchObject({ modality: 'embeddings', usedProvider: 'openai', costMicros: 50, costEstimated: false, status: 200 });
  });

  it('answers the SDK default (base64 on the wire) with float32 little-endian bytes the SDK decodes', async () => {
    const before = await t.balance(t.orgId);
    const res = await t.client.embeddings.create({ model: 'text-embedding-3-large', input: ['first text', 'second text'] });
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    for (const [i, text] of ['first text', 'second text'].entries()) {
      const got = res.data[i]?.embedding ?? [];
      const want = Array.from(embedText(text, 3072));
      expect(got).toHaveLength(3072);
      got.forEach((v, j) => { expect(v).toBeCloseTo(want[j] ?? NaN, 6); });
    }
    // 3 + 3 tokens × $0.13/M rounds to 1 micro-USD
    expect(res.usage.prompt_tokens).toBe(6);
    expect(before - (await t.balance(t.orgId))).toBe(1);
  });

  it('encodes base64 itself when the upstream sent floats (Gemini) and shortens with dimensions', async () => {
    const r = await postJson(`${t.url}/v1/embeddings`, { model: 'gemini-embedding-001', input: 'hello', encoding_format: 'base64', dimensions: 8 }, t.key);
    expect(r.status).toBe(200);
    const b64 = (r.body as { data: Array<{ embedding: string }> }).data[0]?.embedding ?? '';
    expect(typeof b64).toBe('string');
    const floats = decode(b64);
    expect(floats).toHaveLength(8);
    toFloatList(embedText('hello', 8)).forEach((v, i) => { expect(floats[i]).toBeCloseTo(v, 6); });
  });

  it('shortens vectors with dimensions through the SDK', async () => {
    const res = await t.client.embeddings.create({ model: 'text-embedding-3-small', input: 'short me', dimensions: 256 });
    expect(res.data[0]?.embedding).toHaveLength(256);
    expect(res.data[0]?.embedding[0]).toBeCloseTo(embedText('short me', 256)[0] ?? NaN, 6);
  });

  it('passes token-array input to OpenAI and bills the upstream count', async () => {
    const r = await postJson(`${t.url}/v1/embeddings`, { model: 'text-embedding-3-small', input: [[1, 2, 3], [4, 5]] }, t.key);
    expect(r.status).toBe(200);
    const body = r.body as { data: unknown[]; usage: { prompt_tokens: number } };
    expect(body.data).toHaveLength(2);
    expect(body.usage.prompt_tokens).toBe(5);
  });
});

describe('POST /v1/embeddings with Google models (batchEmbedContents mapped in YAML)', () => {
  it('serves gemini-embedding-001 through the SDK, counting tokens the upstream does not report', async () => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const { data, response } = await t.client.embeddings.create({ model: 'gemini-embedding-001', input: [LONG, 'x'] }).withResponse();
    expect(data.data).toHaveLength(2);
    expect(data.data[0]?.embedding).toHaveLength(3072);
    data.data[1]?.embedding.slice(0, 5).forEach((v, i) => { expect(v).toBeCloseTo(embedText('x', 3072)[i] ?? NaN, 6); });
    // estimated: ceil(10000 / 4) + 1 = 2,501 tokens × $0.15/M = 375.15 → 375 micro-USD
    expect(data.usage.prompt_tokens).toBe(2501);
    expect(before - (await t.balance(t.orgId))).toBe(375);
    expect(t.sim.calls()).toEqual({ 'POST /gemini/v1beta/models/gemini-embedding-001:batchEmbedContents': 1 });
    expect(await logRow(t, response.headers.get('x-request-id') ?? '')).toMatchObject({ usedProvider: 'google', costMicros: 375, costEstimated: true });
  });

  it('serves gemini-embedding-2-preview with dimensions', async () => {
    const before = await t.balance(t.orgId);
    const res = await t.client.embeddings.create({ model: 'gemini-embedding-2-preview', input: LONG, dimensions: 768 });
    expect(res.data[0]?.embedding).toHaveLength(768);
    expect(before - (await t.balance(t.orgId))).toBe(500); // 2,500 × $0.20/M
  });

  it('refuses token-array input for Gemini with the YAML transform\'s 400, before any upstream call', async () => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/embeddings`, { model: 'gemini-embedding-001', input: [1, 2, 3] }, t.key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/Token-id input/) });
    expect(t.sim.calls()).toEqual({});
    expect(await t.balance(t.orgId)).toBe(before);
  });
});

describe('POST /v1/embeddings refuses bad input with a clear 4xx and charges nothing', () => {
  const cases: Array<[string, Record<string, unknown>, number, string, string | null]> = [
    ['an empty string', { model: 'text-embedding-3-small', input: '' }, 400, 'invalid_request', 'input'],
    ['an empty array', { model: 'text-embedding-3-small', input: [] }, 400, 'invalid_request', 'input'],
    ['an empty string in the array', { model: 'text-embedding-3-small', input: ['a', ''] }, 400, 'invalid_request', 'input[1]'],
    ['a missing input', { model: 'text-embedding-3-small' }, 400, 'invalid_request', 'input'],
    ['mixed input', { model: 'text-embedding-3-small', input: ['a', [1]] }, 400, 'invalid_request', 'input[0]'],
    ['dimensions 0', { model: 'text-embedding-3-small', input: 'a', dimensions: 0 }, 400, 'invalid_request', 'dimensions'],
    ['fractional dimensions', { model: 'text-embedding-3-small', input: 'a', dimensions: 1.5 }, 400, 'invalid_request', 'dimensions'],
    ['dimensions above the model\'s size', { model: 'text-embedding-3-small', input: 'a', dimensions: 2000 }, 400, 'invalid_request', 'dimensions'],
    ['dimensions for a model that cannot shorten', { model: 'text-embedding-ada-002', input: 'a', dimensions: 256 }, 400, 'invalid_request', 'dimensions'],
    ['an unknown encoding_format', { model: 'text-embedding-3-small', input: 'a', encoding_format: 'hex' }, 400, 'invalid_request', 'encoding_format'],
    ['more inputs than OpenAI takes', { model: 'text-embedding-3-small', input: Array.from({ length: 2049 }, () => 'a') }, 400, 'invalid_request', 'input'],
    ['more inputs than Gemini takes', { model: 'gemini-embedding-001', input: Array.from({ length: 101 }, () => 'a') }, 400, 'invalid_request', 'input'],
    ['a chat model', { model: 'gpt-4o-mini', input: 'a' }, 404, 'model_not_found', 'model'],
    ['a model past its deactivation date', { model: 'text-embedding-004', input: 'a' }, 410, 'model_deactivated', 'model'],
  ];
  it.each(cases)('%s', async (_name, body, status, code, param) => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/embeddings`, body, t.key);
    expect(r.status).toBe(status);
    expect((r.body as ErrorBody).error).toMatchObject({ code, param });
    expect(t.sim.calls()).toEqual({});
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('names the deactivation date of a deactivated model', async () => {
    const r = await postJson(`${t.url}/v1/embeddings`, { model: 'text-embedding-004', input: 'a' }, t.key);
    expect((r.body as ErrorBody).error.message).toMatch(/deactivated on 2026-01-14/);
  });

  it('maps upstream failures to 502 and charges nothing', async () => {
    for (const model of ['text-embedding-3-small', 'gemini-embedding-001']) {
      for (const fault of ['status=500', 'malformed']) {
        const before = await t.balance(t.orgId);
        const err = await t.client.embeddings.create({ model, input: `x [[sim:${fault}]]` }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OpenAI.APIError);
        expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
        expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_error');
        expect(await t.balance(t.orgId)).toBe(before);
      }
    }
  });

  it('requires a key', async () => {
    const r = await postJson(`${t.url}/v1/embeddings`, { model: 'text-embedding-3-small', input: 'a' });
    expect(r.status).toBe(401);
  });
});
