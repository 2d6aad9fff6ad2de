import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { micros } from './chat-helpers.js';
import { useGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson, runTask } from './harness.js';
import { startS3, type TestS3 } from './s3.js';

/**
 * POST /v1/images/generations with the official openai SDK: gpt-image-1 billed per
 * token from its usage, DALL·E per image by quality and size, Imagen through a YAML
 * transform; b64_json replies, and url replies hosted in S3 for the org until the sweep.
 */

const HOUR = 3_600_000;
let clock = Date.UTC(2026, 10, 1);
let s3: TestS3;
const t = useGateway(async () => {
  s3 = await startS3('tollgate-images');
  return { now: () => clock, yaml: { storage: { s3: s3.config } } };
});
let alice: { key: string; orgId: string; client: OpenAI };
let bob: { key: string; orgId: string };

beforeAll(async () => {
  const a = await t.org('img-alice', '10');
  const b = await t.org('img-bob', '10');
  alice = { key: a.key, orgId: a.org.id, client: new OpenAI({ apiKey: a.key, baseURL: `${t.url}/v1`, maxRetries: 0 }) };
  bob = { key: b.key, orgId: b.org.id };
});
afterEach(async () => {
  await expectLedgerMatchesLog(t, alice.orgId);
  await expectLedgerMatchesLog(t, bob.orgId);
});
afterAll(async () => {
  await s3.close();
});

const isPng = (b64: string): boolean => Buffer.from(b64, 'base64').subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

describe('generations', () => {
  it('gpt-image-1: b64_json PNGs, billed per token from the provider usage ($5/M text in, $40/M image out)', async () => {
    const before = await t.balance(alice.orgId);
    const { data: r, response } = await alice.client.images.generate({ model: 'gpt-image-1', prompt: 'a red fox', n: 2, quality: 'low', size: '1024x1024' }).withResponse();
    expect(r.data).toHaveLength(2);
    for (const img of r.data ?? []) expect(isPng(img.b64_json ?? '')).toBe(true);
    const usage = r.usage as unknown as Record<string, number>;
    expect(usage).toMatchObject({ input_tokens: 3, output_tokens: 2 * 272 });
    const cost = micros(3, '5') + micros(544, '40');
    expect(Math.round(usage.cost_usd_total! * 1e6)).toBe(cost);
    expect(before - (await t.balance(alice.orgId))).toBe(cost);
    expect(await logRow(t, response.headers.get('x-request-id') ?? '')).toMatchObject({ modality: 'image', costMicros: cost, usedProvider: 'openai', costEstimated: false });
  });

  it.each([
    ['standard', '1024x1024', 40_000], ['hd', '1024x1792', 120_000],
  ] as const)('dall-e-3 %s %s: priced per image from its variant', async (quality, size, cost) => {
    const before = await t.balance(alice.orgId);
    const r = await alice.client.images.generate({ model: 'dall-e-3', prompt: 'a lighthouse', quality, size, response_format: 'b64_json' });
    expect(isPng(r.data?.[0]?.b64_json ?? '')).toBe(true);
    expect(r.data?.[0]?.revised_prompt).toBe('a lighthouse');
    expect(before - (await t.balance(alice.orgId))).toBe(cost);
  });

  it('Imagen (Google, by YAML transform over :predict): n PNGs at $0.02 each for imagen-4.0-fast', async () => {
    const before = await t.balance(alice.orgId);
    const r = await alice.client.images.generate({ model: 'imagen-4.0-fast-generate-001', prompt: 'a mountain', n: 3, response_format: 'b64_json' });
    expect(r.data).toHaveLength(3);
    expect(before - (await t.balance(alice.orgId))).toBe(60_000);
    expect(t.sim.calls()['POST /gemini/v1beta/models/imagen-4.0-fast-generate-001:predict']).toBeGreaterThan(0);
  });

  it.each([
    [{ model: 'dall-e-3', prompt: 'x', n: 2 }, 'n'], [{ model: 'dall-e-3', prompt: 'x', size: '512x512' }, 'size'], [{ model: 'dall-e-3', prompt: 'x', quality: 'ultra' }, 'quality'],
    [{ model: 'gpt-image-1' }, 'prompt'], [{ model: 'gpt-image-1', prompt: 'x', n: 0 }, 'n'], [{ model: 'imagen-4.0-generate-001', prompt: 'x', size: '256x256' }, 'size'],
    [{ model: 'gpt-image-1', prompt: 'x', response_format: 'png' }, 'response_format'],
  ])('%j → 400 naming %s, nothing charged', async (body, param) => {
    const before = await t.balance(alice.orgId);
    const r = await postJson(`${t.url}/v1/images/generations`, body, alice.key);
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', param } } });
    expect(await t.balance(alice.orgId)).toBe(before);
  });

  it('the image models are in the catalogue, with their prices and variants', async () => {
    const models = (await (await fetch(`${t.url}/v1/models`)).json()) as { data: Array<Record<string, unknown>> };
    const byId = new Map(models.data.map((m) => [m.id, m]));
    expect(byId.get('gpt-image-1')).toMatchObject({ modality: 'image', pricing: { prompt: '0.000005', completion: '0.00004' } });
    expect(byId.get('dall-e-3')).toMatchObject({ modality: 'image', pricing: { image: '0.04' }, pricing_variants: { 'hd/1024x1792': { image: '0.12' } } });
    expect(byId.get('imagen-4.0-generate-001')).toMatchObject({ modality: 'image', owned_by: 'google' });
  });
});

describe('hosted images (url replies)', () => {
  it('a url reply points at the gateway; the org downloads the PNG, another org gets 404; after the retention it is swept (410)', async () => {
    const r = await alice.client.images.generate({ model: 'dall-e-2', prompt: 'a boat', n: 2, size: '256x256', response_format: 'url' });
    const urls = (r.data ?? []).map((d) => d.url ?? '');
    expect(urls).toHaveLength(2);
    expect(urls[0]).toMatch(new RegExp(`^${t.url}/v1/images/log_[^/]+_0/content$`));
    const mine = await fetch(urls[0]!, { headers: { authorization: `Bearer ${alice.key}` } });
    expect(mine.status).toBe(200);
    expect(mine.headers.get('content-type')).toBe('image/png');
    expect(isPng(Buffer.from(await mine.arrayBuffer()).toString('base64'))).toBe(true);
    expect((await fetch(urls[1]!, { headers: { authorization: `Bearer ${bob.key}` } })).status).toBe(404);
    expect((await fetch(urls[1]!)).status).toBe(401);
    clock += 24 * HOUR + 1;
    expect(await runTask(t, 'images-retention-sweep')).toMatchObject({ result: expect.stringMatching(/^deleted 2 /) });
    expect((await fetch(urls[0]!, { headers: { authorization: `Bearer ${alice.key}` } })).status).toBe(410);
  });

  it('dall-e defaults to url when storage is configured, as OpenAI; gpt-image-1 to b64_json', async () => {
    const dalle = await alice.client.images.generate({ model: 'dall-e-2', prompt: 'a cat', size: '256x256' });
    expect(dalle.data?.[0]?.url).toMatch(/\/v1\/images\/.+\/content$/);
    const gpt = await alice.client.images.generate({ model: 'gpt-image-1', prompt: 'a cat', quality: 'low' });
    expect(gpt.data?.[0]?.b64_json).toBeTruthy();
  });
});
