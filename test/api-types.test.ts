import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { coreOpenApiDocument } from '../src/management/openapi-doc.js';
import { renderApiTypes, type TypesTarget } from '../src/management/openapi-types.js';

/**
 * The management API's TypeScript types are generated from its route schemas (the same
 * ones fastify validates with and /api/openapi.json shows): server handlers and the
 * console compile against them, so a stale copy would hide a changed schema.
 */
const ROOT = join(import.meta.dirname, '..');
const FILES: Record<TypesTarget, string> = { server: 'src/management/api-types.ts', console: 'console/src/api-types.ts' };

describe('generated management API types', () => {
  it.each(Object.entries(FILES) as Array<[TypesTarget, string]>)('%s copy (%s) matches the route schemas', async (target, file) => {
    const want = renderApiTypes(await coreOpenApiDocument(), target);
    const have = readFileSync(join(ROOT, file), 'utf8');
    expect(have === want, `${file} is stale: run \`npm run gen:api\` and commit the result`).toBe(true);
  });

  it('types what each route validates', async () => {
    const doc = await coreOpenApiDocument();
    const server = renderApiTypes(doc, 'server');
    const client = renderApiTypes(doc, 'console');
    // A body field with a default is always present for a handler, optional for a client.
    expect(server).toMatch(/'POST \/api\/v1\/orgs': \{[\s\S]*?retention: 'standard' \| 'none';/);
    expect(client).toMatch(/'POST \/api\/v1\/orgs': \{[\s\S]*?retention\?: 'standard' \| 'none';/);
    // Path parameters and coerced query integers; titled response schemas are named types.
    expect(server).toMatch(/'GET \/api\/v1\/orgs\/:org\/projects\/:project': \{\n {4}params: \{\n {6}org: string;\n {6}project: string;/);
    expect(client).toMatch(/'GET \/api\/v1\/orgs\/:org\/projects': \{[\s\S]*?response: \{\n {6}data: Array<Project>;/);
    expect(client).toContain('export type Org = {');
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
    const out = renderApiTypes(doc, 'console');
    expect(out).toContain("export type Thing = {\n  id: string;\n};");
    expect(out).toContain('response: Thing | null;');
    expect(out).toContain('limit?: number;');
    for (const line of ['n: number | null;', "kind?: 'a' | 'it\\'s' | null;", 'amount?: number | string;', 'tags?: Array<string>;', 'meta?: Record<string, unknown>;', 'flag?: true;', "'x-odd'?: Record<string, number>;"]) {
      expect(out).toContain(line);
    }
    expect(renderApiTypes(doc, 'server')).toContain('limit: number;');
  });
});
