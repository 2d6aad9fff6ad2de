import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileSchemas } from '../config/schemas.js';
import { ConfigError } from '../config/yaml-file.js';
import { loadCatalog, type ModalityRules } from './catalog.js';

const schemas = compileSchemas();
const modalities = new Map<string, ModalityRules>([['chat', { requiredPricing: ['prompt', 'completion'], dialects: ['openai'] }]]);

const provider = (over: string) => `id: acme
name: Acme
base_url: https://acme.example/v1
auth: { header: Authorization, format: "Bearer {key}" }
endpoints:
  chat: { path: /chat/completions, dialect: openai }
models:
${over}`;
const model = '  - { id: acme-1, modality: chat, pricing: { prompt: "0.000001", completion: "0.000002" } }\n';

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-prov-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function refusal(files: Record<string, string>, overrides = {}): string {
  try {
    loadCatalog({ dir: dirWith(files), schemas, overrides, modalities });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message.replace(/\/tmp\/tollgate-prov-[^/]+\//g, '');
  }
  throw new Error('accepted');
}

describe('provider catalogue', () => {
  it('routes a model id, its aliases and provider/model pins', () => {
    const dir = dirWith({
      'a.yaml': provider('  - { id: m, aliases: [m-alias], modality: chat, pricing: { prompt: "0.000001", completion: "0.000002" } }\n'),
      'b.yaml': provider(model.replace('acme-1', 'm')).replace('id: acme', 'id: bravo'),
    });
    const cat = loadCatalog({ dir, schemas, overrides: { bravo: { base_url: 'http://127.0.0.1:9/x/', api_key: 'k' } }, modalities });
    expect(cat.routesFor('m').map((r) => r.provider.id)).toEqual(['acme', 'bravo']);
    expect(cat.routesFor('m-alias').map((r) => r.provider.id)).toEqual(['acme']);
    expect(cat.routesFor('bravo/m').map((r) => r.provider.id)).toEqual(['bravo']);
    expect(cat.routesFor('nobody/m')).toEqual([]);
    expect(cat.routesFor('zzz')).toEqual([]);
    const bravo = cat.providers.get('bravo');
    expect(bravo?.baseUrl).toBe('http://127.0.0.1:9/x');
    expect(bravo?.apiKey).toBe('k');
    expect(cat.routesFor('m')[0]?.model.pricePicos).toEqual({ prompt: 1_000_000n, completion: 2_000_000n });
  });

  it.each([
    ['a model without the prices its modality needs', provider('  - { id: free, modality: chat, pricing: { prompt: "0.1" } }\n'), 'p.yaml:8: /models/0/pricing: a chat model must price completion'],
    ['a price that is not a decimal string', provider('  - { id: x, modality: chat, pricing: { prompt: "1e-6", completion: "1" } }\n'), 'p.yaml:8: /models/0/pricing/prompt: must be a decimal USD string such as "0.0000025"'],
    ['a model without pricing at all', provider('  - { id: x, modality: chat }\n'), 'p.yaml:8: /models/0: must have the field "pricing"'],
    ['an unknown dialect', provider(model).replace('dialect: openai', 'dialect: klingon'), 'p.yaml:6: /endpoints/chat/dialect: unknown dialect "klingon" for chat (known: openai)'],
    ['a modality no plugin serves', provider(model).replace('  chat:', '  video:').replace('modality: chat', 'modality: video'), 'p.yaml:6: /endpoints/video: no loaded plugin serves the modality "video"'],
    ['a model whose modality has no endpoint', provider(model.replace('modality: chat', 'modality: music')), 'p.yaml:8: /models/0/modality: provider has no endpoint for modality "music"'],
    ['an auth format without {key}', provider(model).replace('"Bearer {key}"', '"Bearer"'), 'p.yaml:4: /auth/format: must match pattern'],
  ])('refuses %s at its file and line', (_n, text, expected) => {
    expect(refusal({ 'p.yaml': text })).toContain(expected);
  });

  it('refuses a provider id declared twice, and an override for a provider no file declares', () => {
    expect(refusal({ 'a.yaml': provider(model), 'b.yaml': provider(model) })).toContain('b.yaml:1: /id: provider id "acme" is declared twice');
    expect(refusal({ 'a.yaml': provider(model) }, { ghost: { api_key: 'x' } })).toContain('/providers/ghost: no provider file declares id "ghost"');
  });

  it('a refused provider file is the only error: gateway.yaml\'s settings for it are not also "declared by no file" (issue 35)', () => {
    const typo = provider(model).replace('models:', 'modles:');
    expect(refusal({ 'acme.yaml': typo }, { acme: { api_key: 'x' } })).toBe(
      'acme.yaml:1: must have the field "models"\nacme.yaml:7: /modles: is not a known setting; did you mean /models?',
    );
    // Named by its id when the file name differs, and by its file name when the YAML does not even parse.
    expect(refusal({ 'other.yaml': typo }, { acme: { api_key: 'x' } })).not.toContain('no provider file declares');
    expect(refusal({ 'acme.yaml': provider(model).replace('name: Acme', 'name: Acme\n  bad: indent') }, { acme: { api_key: 'x' } }))
      .toBe('acme.yaml:3: YAML syntax: bad indentation: this line is indented more than the key above it, which has a value on its own line; line it up with that key');
  });

  it('lists a model with aliases once among all routes (/v1/models showed "anthropic, anthropic")', () => {
    const cat = loadCatalog({ dir: dirWith({ 'a.yaml': provider('  - { id: m, aliases: [m-1, m-2], modality: chat, pricing: { prompt: "0.000001", completion: "0.000002" } }\n') }), schemas, overrides: {}, modalities });
    expect(cat.allRoutes().map((r) => `${r.provider.id}/${r.model.id}`)).toEqual(['acme/m']);
    expect(cat.routesFor('m-2')[0]).toBe(cat.routesFor('m')[0]);
  });

  it('refuses an auth with neither a key header nor a scheme, and a scheme with a key header', () => {
    const noHeader = provider(model).replace('auth: { header: Authorization, format: "Bearer {key}" }', 'auth: { format: "Bearer {key}" }');
    expect(refusal({ 'acme.yaml': noHeader })).toMatch(/auth needs header and format \(or a scheme\)/);
    const both = provider(model).replace('auth: { header: Authorization, format: "Bearer {key}" }', 'auth: { scheme: aws-sigv4, service: bedrock, header: Authorization, format: "Bearer {key}" }');
    expect(refusal({ 'acme.yaml': both })).toMatch(/makes its own credentials: header and format do not apply/);
  });

  it('leaves out a provider disabled in gateway.yaml', () => {
    const cat = loadCatalog({ dir: dirWith({ 'a.yaml': provider(model) }), schemas, overrides: { acme: { enabled: false } }, modalities });
    expect(cat.routesFor('acme-1')).toEqual([]);
  });
});

describe('provider transforms', () => {
  it('compiles declarative transforms at load and refuses a broken one with its file and line', () => {
    const withTransform = (expr: string) => provider(model).replace('chat: { path: /chat/completions, dialect: openai }',
      `chat: { path: /chat/completions, request: { body: '${expr}' } }`);
    const cat = loadCatalog({ dir: dirWith({ 'a.yaml': withTransform('{"q": prompt}') }), schemas, overrides: {}, modalities });
    expect(cat.routesFor('acme-1')[0]?.endpoint.transforms.request).toBeTypeOf('function');
    expect(refusal({ 'p.yaml': withTransform('{"q": ') })).toMatch(/p\.yaml:6: \/endpoints\/chat: bad transform: request\.body: /);
  });
});

describe('endpoint alternatives, model rules, price tiers and variants', () => {
  const rules = new Map<string, ModalityRules>([
    ['chat', { requiredPricing: ['prompt', 'completion'], dialects: ['openai', 'openai-responses'] }],
    ['image', { requiredPricing: [], dialects: [], checkModel: (m) => (m.pricePicos.image === undefined ? 'an image model must price image' : undefined) }],
  ]);
  const load = (files: Record<string, string>) => loadCatalog({ dir: dirWith(files), schemas, overrides: {}, modalities: rules });

  it('an endpoint with `modality:` is another endpoint of that modality; the route keeps the one named after it', () => {
    const text = provider(model).replace('  chat: { path: /chat/completions, dialect: openai }',
      '  chat: { path: /chat/completions, dialect: openai }\n  responses: { modality: chat, path: /responses, dialect: openai-responses, first_byte_timeout_ms: 500 }');
    const route = load({ 'a.yaml': text }).routesFor('acme-1')[0];
    expect(route?.endpoint).toMatchObject({ name: 'chat', modality: 'chat', path: '/chat/completions', firstByteTimeoutMs: undefined });
    expect(route?.provider.endpoints.responses).toMatchObject({ name: 'responses', modality: 'chat', dialect: 'openai-responses', firstByteTimeoutMs: 500 });
  });

  it('reads max_tokens_param, pricing tiers (lowest threshold first) and variants', () => {
    const m = `  - id: pro
    modality: chat
    max_tokens_param: max_completion_tokens
    pricing: { prompt: "0.000001", completion: "0.000002" }
    pricing_tiers:
      - { above_prompt_tokens: 500000, pricing: { prompt: "0.000004" } }
      - { above_prompt_tokens: 200000, pricing: { prompt: "0.000002" } }
    pricing_variants: { hd/1024x1024: { completion: "0.000009" } }
`;
    const def = load({ 'a.yaml': provider(m) }).routesFor('pro')[0]?.model;
    expect(def?.maxTokensParam).toBe('max_completion_tokens');
    expect(def?.pricingTiers.map((t) => [t.abovePromptTokens, t.pricePicos.prompt])).toEqual([[200_000, 2_000_000n], [500_000, 4_000_000n]]);
    expect(def?.pricingVariants['hd/1024x1024']).toEqual({ pricing: { completion: '0.000009' }, pricePicos: { completion: 9_000_000n } });
    expect(load({ 'a.yaml': provider(model) }).routesFor('acme-1')[0]?.model).toMatchObject({ maxTokensParam: 'max_tokens', pricingTiers: [], pricingVariants: {} });
  });

  it('reads unsupported_params per provider and per model, and refuses a value it does not know', () => {
    const models = `${model}  - { id: acme-2, modality: chat, unsupported_params: error, pricing: { prompt: "0.000001", completion: "0.000002" } }\n`;
    const cat = load({ 'a.yaml': `unsupported_params: drop\n${provider(models)}` });
    expect(cat.routesFor('acme-1')[0]?.provider.unsupportedParams).toBe('drop');
    expect(cat.routesFor('acme-1')[0]?.model.unsupportedParams).toBeUndefined();
    expect(cat.routesFor('acme-2')[0]?.model.unsupportedParams).toBe('error');
    expect(() => load({ 'a.yaml': `unsupported_params: ignore\n${provider(model)}` })).toThrow(/unsupported_params/);
  });

  it("refuses a model its modality's rule refuses, at its file and line", () => {
    const text = provider('  - { id: pic, modality: image, pricing: { request: "0.01" } }\n').replace('  chat: { path: /chat/completions, dialect: openai }', '  image: { path: /images }');
    try {
      load({ 'p.yaml': text });
      expect.unreachable();
    } catch (err) {
      expect((err as ConfigError).message).toMatch(/p\.yaml:8: \/models\/0: an image model must price image/);
    }
  });
});
