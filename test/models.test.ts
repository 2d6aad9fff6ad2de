import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { copyProviders, expectLedgerMatchesLog, postJson, tempDir } from './harness.js';
import { addUser, Api, code, signIn } from './management-helpers.js';

interface ProviderEntry { providerId: string; modelName: string; pricing: Record<string, unknown>; [flag: string]: unknown }
interface ModelRecord {
  id: string; modality: string; pricing: Record<string, unknown>; providers: ProviderEntry[];
  deprecated_at: string | null; deactivated_at: string | null; [field: string]: unknown;
}

const t = useOrgGateway('browser', '1', () => {
  const providers = copyProviders(tempDir());
  // A second provider for one model id, and models at each stage of their life.
  writeFileSync(join(providers, 'zz-fixture.yaml'), `
id: fixture
name: Fixture
base_url: http://127.0.0.1:9/v1
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  embeddings: { path: /embeddings }
models:
  - { id: text-embedding-3-small, upstream_id: te3s-mirror, modality: embeddings, pricing: { prompt: "0.00000003" } }
  - { id: old-embedder, modality: embeddings, deprecated_at: "2020-01-01", pricing: { prompt: "0.0000001" } }
  - { id: retired-embedder, modality: embeddings, deprecated_at: "2020-01-01", deactivated_at: "2021-06-30", pricing: { prompt: "0.0000001" } }
  - { id: future-embedder, modality: embeddings, deprecated_at: "2999-01-01", deactivated_at: "2999-06-30", pricing: { prompt: "0.0000001" } }
`);
  return { providersDir: providers };
});
afterAll(async () => expectLedgerMatchesLog(t, t.orgId));

async function list(query = '', headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: { object?: string; data: ModelRecord[] } & Partial<ErrorBody> }> {
  const res = await fetch(`${t.url}/v1/models${query}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { data: ModelRecord[] } };
}
const ids = (records: ModelRecord[]): string[] => records.map((m) => m.id);
const find = (records: ModelRecord[], id: string): ModelRecord => {
  const m = records.find((r) => r.id === id);
  if (!m) throw new Error(`${id} is not listed`);
  return m;
};

const RECORD_PRICES = ['prompt', 'completion', 'image', 'request', 'input_cache_read', 'input_cache_write', 'web_search', 'internal_reasoning', 'video_per_second', 'audio_music_per_generation'];
const FLAGS = ['streaming', 'vision', 'documents', 'cancellation', 'tools', 'parallelToolCalls', 'reasoning'];
const USD = /^\d+(\.\d+)?$/;

describe('GET /v1/models', () => {
  it('is public and lists every model of the provider files, each with every field of spec §2.3', async () => {
    const r = await list();
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('public, max-age=60');
    expect(r.body.object).toBe('list');
    expect(r.body.data.length).toBeGreaterThan(20);
    for (const m of r.body.data) {
      expect(m).toMatchObject({
        id: expect.any(String), name: expect.any(String), aliases: expect.any(Array), created: expect.any(Number),
        description: expect.any(String), family: expect.any(String),
        architecture: { input_modalities: expect.any(Array), output_modalities: expect.any(Array), tokenizer: expect.any(String) },
        top_provider: { is_moderated: expect.any(Boolean) },
        context_length: expect.any(Number), per_request_limits: expect.any(Object), supported_parameters: expect.any(Array),
        json_output: expect.any(Boolean), structured_outputs: expect.any(Boolean), free: expect.any(Boolean), stability: expect.any(String),
        object: 'model', owned_by: expect.any(String),
      });
      expect(Number.isInteger(m.created)).toBe(true);
      expect(m).toHaveProperty('deprecated_at');
      expect(m).toHaveProperty('deactivated_at');
      for (const k of RECORD_PRICES) expect(m.pricing[k], `${m.id} pricing.${k}`).toMatch(USD);
      for (const v of Object.values(m.pricing)) expect(v).toMatch(USD);
      for (const v of Object.values(m.per_request_limits as Record<string, unknown>)) expect(typeof v).toBe('string');
      expect(m.providers.length).toBeGreaterThan(0);
      for (const p of m.providers) {
        expect(p).toMatchObject({ providerId: expect.any(String), modelName: expect.any(String), stability: expect.any(String) });
        for (const k of ['prompt', 'completion', 'image', 'audio_music_per_generation']) expect(p.pricing[k]).toMatch(USD);
        for (const f of FLAGS) expect(typeof p[f], `${m.id} ${p.providerId}.${f}`).toBe('boolean');
      }
    }
  });

  it('shows YAML prices as strings, per unit of each modality', async () => {
    const { data } = (await list()).body;
    expect(find(data, 'text-embedding-3-small').pricing.prompt).toBe('0.00000002');
    expect(find(data, 'tts-1').pricing).toMatchObject({ input_character: '0.000015', prompt: '0' });
    expect(find(data, 'whisper-1').pricing.audio_second).toBe('0.0001');
    expect(find(data, 'nova-3').pricing.audio_second).toBe('0.000071666667');
    expect(find(data, 'tune-3-clip-preview').pricing.audio_music_per_generation).toBe('0.05');
    expect(find(data, 'tune-3-pro-preview').providers[0]?.pricing.audio_music_per_generation).toBe('0.08');
    expect(find(data, 'gpt-4o-mini')).toMatchObject({ free: false, json_output: true, modality: 'chat', context_length: 128000 });
  });

  it('lists one record per model id with an entry per provider, capabilities as booleans', async () => {
    const { data } = (await list()).body;
    expect(data.filter((m) => m.id === 'text-embedding-3-small')).toHaveLength(1);
    expect(find(data, 'text-embedding-3-small').providers.map((p) => [p.providerId, p.modelName, p.pricing.prompt])).toEqual([
      ['openai', 'text-embedding-3-small', '0.00000002'],
      ['fixture', 'te3s-mirror', '0.00000003'],
    ]);
    expect(find(data, 'gpt-4o').providers[0]).toMatchObject({ providerId: 'openai', streaming: true, vision: true, tools: true, parallelToolCalls: true, reasoning: false, documents: false });
  });

  it('serves embeddings, speech and transcription from at least two vendors each', async () => {
    const { data } = (await list()).body;
    for (const modality of ['embeddings', 'speech', 'transcription']) {
      const vendors = new Set(data.filter((m) => m.modality === modality).flatMap((m) => m.providers.map((p) => p.providerId)));
      vendors.delete('fixture');
      expect(vendors.size, modality).toBeGreaterThanOrEqual(2);
    }
  });

  it('leaves out deactivated models unless include_deactivated is set', async () => {
    const plain = ids((await list()).body.data);
    expect(plain).not.toContain('text-embedding-004');
    expect(plain).not.toContain('retired-embedder');
    expect(plain).toContain('future-embedder');
    for (const q of ['?include_deactivated=true', '?include_deactivated', '?include_deactivated=1']) {
      const all = (await list(q)).body.data;
      expect(find(all, 'retired-embedder')).toMatchObject({ deprecated_at: '2020-01-01', deactivated_at: '2021-06-30' });
      expect(find(all, 'text-embedding-004').deactivated_at).toBe('2026-01-14');
    }
    expect(ids((await list('?include_deactivated=false')).body.data)).not.toContain('retired-embedder');
  });

  it('leaves out models past their deprecation date when exclude_deprecated is set', async () => {
    const kept = ids((await list('?exclude_deprecated=true&include_deactivated=true')).body.data);
    expect(kept).not.toContain('old-embedder');
    expect(kept).not.toContain('retired-embedder');
    expect(kept).toContain('future-embedder'); // deprecated only from 2999
    expect(kept).toContain('text-embedding-3-small');
    expect(ids((await list('?exclude_deprecated=false')).body.data)).toContain('old-embedder');
  });

  it('refuses a flag that is neither true nor false', async () => {
    const r = await list('?include_deactivated=maybe');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_request', param: 'include_deactivated' });
  });

  it('works with the official openai client: list and retrieve', async () => {
    const seen: string[] = [];
    for await (const m of t.client.models.list()) seen.push(m.id);
    expect(seen).toEqual(expect.arrayContaining(['text-embedding-3-small', 'gemini-embedding-001', 'tts-1', 'eleven_multilingual_v2', 'whisper-1', 'nova-3']));
    expect(await t.client.models.retrieve('whisper-1')).toMatchObject({ id: 'whisper-1', object: 'model', owned_by: 'openai' });
    expect(await t.client.models.retrieve('text-embedding-004')).toMatchObject({ deactivated_at: '2026-01-14' });
    await expect(t.client.models.retrieve('no-such-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('costs nothing, and a deactivated model is refused at request time with 410', async () => {
    const before = await t.balance(t.orgId);
    await list('', { authorization: `Bearer ${t.key}` });
    const r = await postJson(`${t.url}/v1/embeddings`, { model: 'retired-embedder', input: 'x' }, t.key);
    expect(r.status).toBe(410);
    expect((r.body as ErrorBody).error).toMatchObject({ code: 'model_deactivated', param: 'model', message: expect.stringMatching(/2021-06-30/) });
    expect(await t.balance(t.orgId)).toBe(before);
    // A deprecated model that is still active keeps working until its deactivation.
    expect(find((await list()).body.data, 'old-embedder').deprecated_at).toBe('2020-01-01');
  });
});

describe('GET /api/v1/orgs/{org}/models (the console)', () => {
  it('is the same catalogue as GET /v1/models, for a signed-in member of the org only', async () => {
    await addUser(t, 'member@browser.test', { org: 'browser', role: 'member' });
    const api = await signIn(t.url, 'member@browser.test');
    const r = await api.get(`/api/v1/orgs/${t.orgId}/models`);
    expect([r.status, r.headers.get('cache-control')]).toEqual([200, 'no-store']);
    expect(r.body).toEqual({ object: 'list', data: (await list()).body.data });
    expect(ids(r.body.data as ModelRecord[])).not.toContain('retired-embedder');
    const anonymous = await new Api(t.url).get(`/api/v1/orgs/${t.orgId}/models`);
    expect([anonymous.status, code(anonymous)]).toEqual([401, 'authentication_required']);
    const query = await api.get(`/api/v1/orgs/${t.orgId}/models?include_deactivated=true`);
    expect([query.status, code(query)]).toEqual([400, 'invalid_request']);
  });
});
