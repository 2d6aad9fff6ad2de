import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ApiRoutes } from '../src/management/api-types.js';
import { coreOpenApiDocument, type OpenApiDocument } from '../src/management/openapi-doc.js';
import { renderApiTypes, type TypesTarget } from '../src/management/openapi-files.js';

/**
 * The management API's TypeScript types are generated from its route schemas (the same
 * ones fastify validates with and /api/openapi.json shows): server handlers and the
 * console compile against them, so a stale copy would hide a changed schema.
 */
const ROOT = join(import.meta.dirname, '..');
const DIRS: Record<TypesTarget, string> = { server: 'src/management', console: 'console/src' };
const TARGETS = Object.keys(DIRS) as TypesTarget[];
/** A target's files as one text, to look for a type wherever the generator put it. */
const joined = (doc: OpenApiDocument, target: TypesTarget): string => Object.values(renderApiTypes(doc, target)).join('\n');
/** Both targets' files as one text. */
const all = (doc: OpenApiDocument): string => TARGETS.map((t) => joined(doc, t)).join('\n');

describe('generated management API types', () => {
  it.each(TARGETS)('the %s copy matches the route schemas, file by file', async (target) => {
    const files = renderApiTypes(await coreOpenApiDocument(), target);
    for (const [name, want] of Object.entries(files)) {
      const file = join(DIRS[target], name);
      const have = existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), 'utf8') : '';
      expect(have === want, `${file} is stale: run \`npm run gen:api\` and commit the result`).toBe(true);
    }
    const folder = join(ROOT, DIRS[target], 'api-types');
    const extra = (existsSync(folder) ? readdirSync(folder) : []).filter((f) => files[`api-types/${f}`] === undefined);
    expect(extra, 'files no longer generated: run `npm run gen:api`').toEqual([]);
  });

  it('types what each route validates', async () => {
    const doc = await coreOpenApiDocument();
    const server = joined(doc, 'server');
    const client = joined(doc, 'console');
    // One request contract: a client may leave a defaulted field out; a handler always has it (ApiDefaults).
    expect(server).toMatch(/'POST \/api\/v1\/orgs': \{[\s\S]*?retention\?: 'standard' \| 'none';/);
    expect(server).toContain("'POST /api/v1/orgs': { body: 'retention'; };");
    expectTypeOf<ApiRoutes['POST /api/v1/orgs']['body']['retention']>().toEqualTypeOf<'standard' | 'none'>();
    expectTypeOf<ApiRoutes['POST /api/v1/orgs']['body']['credits_usd']>().toEqualTypeOf<number | string | undefined>();
    expectTypeOf<ApiRoutes['GET /api/v1/orgs/:org/logs']['query']['limit']>().toEqualTypeOf<number>();
    // The console takes it from there, type-only (nothing of the server reaches its bundle), and keeps no copy.
    expect(client).toContain("import type { ApiRequests } from '../../src/management/api-types';");
    expect(client).not.toContain('interface ApiRequests');
    // Path parameters: each `:name` of the route's key, a string (the generator refuses a route declaring otherwise);
    // titled response schemas are named types.
    expect(server).toContain("'GET /api/v1/orgs/:org/projects/:project': {};");
    expectTypeOf<ApiRoutes['GET /api/v1/orgs/:org/projects/:project']['params']>().toEqualTypeOf<{ org: string; project: string }>();
    expectTypeOf<ApiRoutes['GET /api/v1/orgs']['params']>().toEqualTypeOf<Record<string, never>>();
    expect(client).toMatch(/'GET \/api\/v1\/orgs\/:org\/projects': \{[\s\S]*?response: \{\n {6}data: Array<Project>;/);
    expect(client).toContain('export type Org = {');
  });

  it('writes each shape once, and no file over 400 lines', async () => {
    const doc = await coreOpenApiDocument();
    const client = joined(doc, 'console');
    // An object holding every field of a titled one is that one and the rest.
    expect(client).toContain('export type CreatedKey = ApiKey & {\n  /** The API key: shown this once, stored only hashed */\n  key: string;\n};');
    expect(client).toContain('export type RotatedKey = CreatedKey & {');
    // A route answering what another answers, or taking the same query, says so.
    expect(client).toContain("'POST /api/v1/orgs/:org/credits': { response: ApiAnswers['GET /api/v1/orgs/:org/credits']['response']; };");
    expect(joined(doc, 'server')).toContain("'GET /api/v1/audit': { query: ApiRequests['GET /api/v1/orgs/:org/audit']['query']; };");
    for (const name of ['CacheSetting', 'LimitsInput', 'Project']) expect(all(doc).split(`export type ${name} = {`)).toHaveLength(2);
    for (const target of TARGETS) {
      for (const [file, body] of Object.entries(renderApiTypes(doc, target))) expect(body.split('\n').length, `${target} ${file}`).toBeLessThanOrEqual(400);
    }
  });

  it('converts the JSON Schema subset the routes use', () => {
    const doc = {
      paths: {
        '/api/v1/things/{thing}': {
          put: {
            parameters: [{ in: 'path', name: 'thing', required: true, schema: { type: 'string' } }, { in: 'query', name: 'limit', schema: { type: 'integer', default: 5 } }],
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: {
                    type: 'object', required: ['n'], additionalProperties: false,
                    properties: {
                      n: { type: ['integer', 'null'] }, kind: { enum: ['a', "it's", null] }, amount: { anyOf: [{ type: 'number' }, { type: 'string' }] },
                      tags: { type: 'array', items: { type: 'string' } }, meta: { type: 'object', additionalProperties: true }, flag: { type: 'boolean', const: true },
                      'x-odd': { type: 'object', additionalProperties: { type: 'number' } },
                    },
                  },
                },
              },
            },
            responses: { 200: { content: { 'application/json': { schema: { title: 'Thing', type: ['object', 'null'], properties: { id: { type: 'string' } }, required: ['id'] } } } }, '4XX': {} },
          },
        },
      },
    };
    const out = all(doc);
    expect(out).toContain("export type Thing = {\n  id: string;\n};");
    expect(out).toContain('response: Thing | null;');
    expect(out).toContain('limit?: number;');
    for (const line of ['n: number | null;', "kind?: 'a' | 'it\\'s' | null;", 'amount?: number | string;', 'tags?: Array<string>;', 'meta?: Record<string, unknown>;', 'flag?: true;', "'x-odd'?: Record<string, number>;"]) {
      expect(out).toContain(line);
    }
    expect(joined(doc, 'server')).toContain("'PUT /api/v1/things/:thing': { query: 'limit'; };");
    // A default below the top level is refused: the handler's type would say optional.
    const deep = structuredClone(doc);
    const body = deep.paths['/api/v1/things/{thing}'].put.requestBody.content['application/json'].schema as { properties: Record<string, unknown> };
    body.properties.inner = { type: 'object', properties: { depth: { type: 'integer', default: 1 } } };
    expect(() => renderApiTypes(deep, 'server')).toThrow(/PUT \/api\/v1\/things\/:thing body: a default below the top level \(in inner\)/);
    // A field named `default` is not a default.
    body.properties.inner = { type: 'object', properties: { default: { type: 'string' } } };
    expect(renderApiTypes(deep, 'server')['api-types.ts']).toContain('default?: string;');
  });

  it('refuses an untitled shape met twice (a title names it once)', () => {
    const shape = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false };
    const bodyOf = (schema: Record<string, unknown>) => ({ requestBody: { required: true, content: { 'application/json': { schema } } } });
    const doc = {
      paths: {
        '/api/v1/one': { post: bodyOf({ type: 'object', properties: { x: shape }, additionalProperties: false }) },
        '/api/v1/two': { post: bodyOf({ type: 'object', properties: { y: shape }, additionalProperties: false }) },
      },
    };
    expect(() => renderApiTypes(doc, 'server')).toThrow(/untitled shape stands in 2 places \(POST \/api\/v1\/one body; POST \/api\/v1\/two body\)/);
    const titled = { ...shape, title: 'Pair' };
    const named = { paths: { '/api/v1/one': { post: bodyOf({ type: 'object', properties: { x: titled }, additionalProperties: false }) }, '/api/v1/two': { post: bodyOf({ type: 'object', properties: { y: titled }, additionalProperties: false }) } } };
    const out = joined(named, 'server');
    expect(out.split('export type Pair = {')).toHaveLength(2);
    expect(out).toContain('x?: Pair;');
  });
});
