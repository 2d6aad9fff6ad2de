import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAll } from '../cli/catalog.js';
import { describeUpstreams } from '../cli/simulator.js';
import { selectPlugins } from '../plugins/index.js';
import { buildMp3, framesForSeconds } from '../simulator/mp3.js';
import { loadGatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';
import { modalityRules } from '../src/gateway.js';
import { loadCatalog } from '../src/providers/catalog.js';
import { buildOnce, KEY, killAll, ROOT, serve, stopAndCheckLedgers } from './cli-helpers.js';
import { tempDir } from './harness.js';
import { startS3, type TestS3 } from './s3.js';

/**
 * The default gateway.yaml and every example in examples/ start through the CLI and
 * serve every modality of every provider on the built-in simulator, as a newcomer
 * would run them (each in a copy of the repo's layout, so their ./data stays there).
 */
const CONFIGS = ['gateway.yaml', ...readdirSync(join(ROOT, 'examples')).filter((f) => /\.ya?ml$/.test(f)).map((f) => `examples/${f}`)];

let s3: TestS3;
beforeAll(async () => {
  await buildOnce();
  s3 = await startS3();
}, 120_000);
afterAll(async () => {
  await killAll();
  await s3?.close();
});

/** A copy of the files a config may name (itself, the default it extends, providers/) in a temp folder. */
function layout(): string {
  const dir = tempDir('tollgate-example-');
  cpSync(join(ROOT, 'gateway.yaml'), join(dir, 'gateway.yaml'));
  cpSync(join(ROOT, 'providers'), join(dir, 'providers'), { recursive: true });
  cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
  mkdirSync(join(dir, 'data'));
  return dir;
}

/** One model per provider and modality, as the config's catalog declares them. */
function modelsByModality(file: string): Array<{ provider: string; modality: string; model: string; maxTokens: boolean }> {
  const config = loadGatewayConfig(file, compileSchemas());
  const catalog = loadCatalog({ dir: config.providersDir, schemas: compileSchemas(), overrides: config.providers, overridesSource: config, modalities: modalityRules(selectPlugins(config)) });
  const seen = new Map<string, { provider: string; modality: string; model: string; maxTokens: boolean }>();
  for (const r of catalog.allRoutes()) {
    // A cloud with no credentials configured (vertex: no service account in these configs) serves no one.
    if (r.provider.auth.scheme && !r.provider.auth.scheme.account) continue;
    const k = `${r.provider.id} ${r.model.modality}`;
    if (!seen.has(k)) seen.set(k, { provider: r.provider.id, modality: r.model.modality, model: r.model.id, maxTokens: r.model.requiresMaxTokens });
  }
  return [...seen.values()];
}

/** A request for `model` of `modality`, as the OpenAI-style API takes it. */
function request(modality: string, model: string, maxTokens: boolean): { path: string; init: RequestInit } {
  const json = (path: string, body: unknown) => ({ path, init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } });
  switch (modality) {
    case 'chat': return json('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'Hello' }], ...(maxTokens ? { max_tokens: 16 } : {}) });
    case 'embeddings': return json('/v1/embeddings', { model, input: 'Hello' });
    case 'speech': return json('/v1/audio/speech', { model, voice: model.startsWith('eleven') ? '21m00Tcm4TlvDq8ikWAM' : 'alloy', input: 'Hello' });
    case 'music': return json('/v1/music', { model, prompt: 'Warm lofi beat', instrumental: true });
    case 'image': return json('/v1/images/generations', { model, prompt: 'A lighthouse at dusk', n: 1, response_format: 'b64_json' });
    case 'moderation': return json('/v1/moderations', { model, input: 'Hello' });
    case 'transcription': {
      const form = new FormData();
      form.set('model', model);
      form.set('file', new Blob([new Uint8Array(buildMp3(framesForSeconds(2)))], { type: 'audio/mpeg' }), 'hello.mp3');
      return { path: '/v1/audio/transcriptions', init: { method: 'POST', body: form } };
    }
    default: throw new Error(`no request written for modality ${modality}`);
  }
}

describe.each(CONFIGS)('%s', (name) => {
  it('validates with every provider on the built-in simulator and no warning', () => {
    const dir = layout();
    try {
      // What `validate` runs (loadAll, then describeUpstreams for its report), in this process;
      // the binary's own validate is cli-admin.test.ts's, and the next case starts this config through the CLI.
      const { config, catalog } = loadAll(join(dir, name));
      const upstreams = describeUpstreams(config, catalog);
      expect(upstreams.warnings).toEqual([]);
      expect(upstreams.lines.join('\n')).toMatch(/on the built-in simulator/);
      expect(upstreams.lines.join('\n')).not.toMatch(/on real hosts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts through the CLI and serves every modality of every provider through the simulator', async () => {
    const dir = layout();
    try {
      const file = join(dir, name);
      const server = await serve(file, 30_000, ['--simulator-port', '0'], { ...process.env, S3_ENDPOINT: s3.endpoint });
      const key = server.stdout().split('\n').find((l) => KEY.test(l));
      expect(key).toBeDefined();
      const outcomes: Record<string, number> = {};
      const storages = new Set<string>();
      const expected: Record<string, number> = {};
      for (const { provider, modality, model, maxTokens } of modelsByModality(file)) {
        // Pinned: a model several providers serve (claude-sonnet-4-5: anthropic, bedrock) is asked of this one.
        const { path, init } = request(modality, `${provider}/${model}`, maxTokens);
        const res = await fetch(`${server.url}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${key}` } });
        const body = Buffer.from(await res.arrayBuffer());
        outcomes[`${provider} ${modality} ${model}`] = res.status;
        // Music lands where the config says: hosted on S3 when storage.s3 is set, inline otherwise.
        if (modality === 'music' && res.status === 200) storages.add((JSON.parse(body.toString('utf8')) as { audio: { storage: string } }).audio.storage);
        expected[`${provider} ${modality} ${model}`] = 200;
      }
      expect(outcomes).toEqual(expected);
      expect(Object.keys(outcomes).length).toBeGreaterThanOrEqual(8);
      expect([...storages]).toEqual([loadGatewayConfig(file, compileSchemas(), { ...process.env, S3_ENDPOINT: s3.endpoint }).storage.s3 ? 's3' : 'inline']);
      expect((await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      await stopAndCheckLedgers(loadGatewayConfig(file, compileSchemas(), { ...process.env, S3_ENDPOINT: s3.endpoint }).database.url);
    } finally {
      await killAll();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
