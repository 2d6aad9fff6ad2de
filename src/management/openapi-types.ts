import type { OpenApiDocument, OpenApiOperation } from './openapi-doc.js';

/*
 * The management API's TypeScript types, written from its OpenAPI document (itself made
 * from the routes' JSON Schemas), so that the server's handlers and the console read the
 * shapes fastify validates and serialises. A small JSON Schema → TypeScript converter
 * for the subset the routes use: object, array, string, number, integer, boolean, null,
 * enum, const, anyOf/oneOf, required, additionalProperties; `title` names a shared type.
 */

type Schema = Record<string, unknown>;

/**
 * `server`: what a handler receives — path parameters, query and body after validation
 * (a field with a default is always present); `console`: what a client sends (defaults
 * optional) and what each route answers.
 */
export type TypesTarget = 'server' | 'console';

interface Ctx {
  target: TypesTarget;
  /** Shared types by title (a schema's `title`), rendered once. */
  named: Map<string, string>;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** A value as a TypeScript literal, strings in single quotes (the code's style). */
const literal = (v: unknown): string =>
  typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(v);
const key = (k: string): string => (IDENT.test(k) ? k : literal(k));
const comment = (text: unknown, indent: string): string =>
  typeof text === 'string' && text.trim() ? `${indent}/** ${text.trim().replace(/\*\//g, '*\\/').replace(/\s*\n\s*/g, ' ')} */\n` : '';
const union = (parts: string[]): string => [...new Set(parts)].join(' | ') || 'never';

/** The TypeScript type of one JSON Schema, `indent` being the indentation of the line it starts on. */
function tsType(s: Schema, indent: string, ctx: Ctx): string {
  if (typeof s.title === 'string' && IDENT.test(s.title)) {
    const { title, ...rest } = s;
    // A nullable titled schema (`maybe(ORG)`): the title names the non-null part.
    if (Array.isArray(rest.type) && rest.type.includes('null')) {
      const types = (rest.type as string[]).filter((t) => t !== 'null');
      return `${tsType({ ...s, type: types.length === 1 ? types[0] : types }, indent, ctx)} | null`;
    }
    const body = tsType(rest, '', ctx);
    const seen = ctx.named.get(title);
    if (seen !== undefined && seen !== body) throw new Error(`two different schemas are titled ${title} (a schema spread from a titled one keeps its title): give one its own`);
    ctx.named.set(title, body);
    return title;
  }
  if (s.const !== undefined) return literal(s.const);
  if (Array.isArray(s.enum)) return union(s.enum.map(literal));
  const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (Array.isArray(alternatives)) {
    const { anyOf: _a, oneOf: _o, ...rest } = s;
    return union(alternatives.map((a) => tsType({ ...rest, ...a }, indent, ctx)));
  }
  if (Array.isArray(s.type)) return union((s.type as string[]).map((t) => tsType({ ...s, type: t }, indent, ctx)));
  switch (s.type) {
    case 'string': return 'string';
    case 'integer':
    case 'number': return 'number';
    case 'boolean': return 'boolean';
    case 'null': return 'null';
    case 'array': return `Array<${s.items && typeof s.items === 'object' ? tsType(s.items as Schema, indent, ctx) : 'unknown'}>`;
    case 'object': return objectType(s, indent, ctx);
    default: return s.properties ? objectType(s, indent, ctx) : 'unknown';
  }
}

function objectType(s: Schema, indent: string, ctx: Ctx): string {
  const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
  const required = new Set((s.required ?? []) as string[]);
  const extra = s.additionalProperties;
  if (props.length === 0) {
    if (extra && typeof extra === 'object') return `Record<string, ${tsType(extra as Schema, indent, ctx)}>`;
    return extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
  }
  const inner = `${indent}  `;
  const lines = props.map(([name, p]) => {
    const present = required.has(name) || (ctx.target === 'server' && p.default !== undefined);
    return `${comment(p.description, inner)}${inner}${key(name)}${present ? '' : '?'}: ${tsType(p, inner, ctx)};\n`;
  });
  if (extra && typeof extra === 'object') lines.push(`${inner}[field: string]: unknown;\n`);
  return `{\n${lines.join('')}${indent}}`;
}

/** Path or query parameters (OpenAPI lists them one by one) as one object schema. */
function parameters(op: OpenApiOperation, where: 'path' | 'query'): Schema {
  const list = (op.parameters ?? []).filter((p) => p.in === where);
  return {
    type: 'object',
    properties: Object.fromEntries(list.map((p) => [p.name, { ...p.schema, ...(p.description ? { description: p.description } : {}) }])),
    required: list.filter((p) => p.required).map((p) => p.name),
    additionalProperties: false,
  };
}

const jsonSchemaOf = (part: { content?: Record<string, { schema?: Schema }> } | undefined): Schema | undefined => part?.content?.['application/json']?.schema;

function routeEntry(op: OpenApiOperation, ctx: Ctx): string {
  const i = '    ';
  const body = jsonSchemaOf(op.requestBody);
  const bodyType = body ? `${tsType(body, i, ctx)}${op.requestBody?.required ? '' : ' | undefined'}` : 'undefined';
  const lines = [];
  if (ctx.target === 'server') lines.push(`${i}params: ${tsType(parameters(op, 'path'), i, ctx)};\n`);
  lines.push(`${i}query: ${tsType(parameters(op, 'query'), i, ctx)};\n`, `${i}body: ${bodyType};\n`);
  if (ctx.target === 'console') {
    const ok = Object.entries(op.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));
    const answers = ok.map(([, r]) => jsonSchemaOf(r)).map((s) => (s ? tsType(s, i, ctx) : 'null'));
    lines.push(`${i}response: ${union(answers)};\n`);
  }
  return `{\n${lines.join('')}  }`;
}

const HEADER = `/*
 * Generated by \`npm run gen:api\` (scripts/gen-api-types.mjs) from the management API's
 * route schemas in src/management/ — do not edit; change the schemas and run it again.
 * test/api-types.test.ts fails while this file is stale.
 */
`;

/** The TypeScript module of the document's routes, keyed `"METHOD /path/:param"` as the routes are written. */
export function renderApiTypes(doc: OpenApiDocument, target: TypesTarget): string {
  const ctx: Ctx = { target, named: new Map() };
  const entries: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const route = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`;
      entries.push(`${comment((op as { summary?: string }).summary, '  ')}  ${literal(route)}: ${routeEntry(op, ctx)};\n`);
    }
  }
  const named = [...ctx.named].sort(([a], [b]) => a.localeCompare(b)).map(([name, body]) => `export type ${name} = ${body};\n`);
  const what = target === 'server'
    ? 'What each route\'s handler receives, validated: path parameters, query and body.'
    : 'What each route takes (query, body) and answers (its 2xx body).';
  return `${HEADER}\n${named.join('\n')}${named.length ? '\n' : ''}/** ${what} */\nexport interface ApiRoutes {\n${entries.join('')}}\n\nexport type RouteKey = keyof ApiRoutes;\n`;
}
