import type { OpenApiDocument, OpenApiOperation } from './openapi-doc.js';

/*
 * The management API's TypeScript types, written from its OpenAPI document (itself made
 * from the routes' JSON Schemas), so that the server's handlers and the console read the
 * shapes fastify validates and serialises. A small JSON Schema → TypeScript converter
 * for the subset the routes use: object, array, string, number, integer, boolean, null,
 * enum, const, anyOf/oneOf, required, additionalProperties.
 *
 * Each shape is written once. A schema's `title` names its type; an object holding every
 * field of a titled one is written as that type `&` the rest (`CreatedKey = ApiKey & { key }`);
 * a route whose query, body or answer is another route's says so; and a shape of two or
 * more fields met twice without a title is refused, naming where (give its schema a title).
 */

type Schema = Record<string, unknown>;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** A value as a TypeScript literal, strings in single quotes (the code's style). */
const literal = (v: unknown): string =>
  typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(v);
const key = (k: string): string => (IDENT.test(k) ? k : literal(k));
export const comment = (text: unknown, indent: string): string =>
  typeof text === 'string' && text.trim() ? `${indent}/** ${text.trim().replace(/\*\//g, '*\\/').replace(/\s*\n\s*/g, ' ')} */\n` : '';
const union = (parts: string[]): string => [...new Set(parts)].join(' | ') || 'never';
/** A type written from column 0, placed at `indent`: its later lines move with it. */
const indented = (text: string, indent: string): string => text.replace(/\n/g, `\n${indent}`);

/** JSON with sorted keys: two schemas are the same shape when these are equal. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x)
    ? Object.fromEntries(Object.entries(x as Schema).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : x));
}

export const propsOf = (s: Schema): Record<string, Schema> => (s.properties ?? {}) as Record<string, Schema>;
export const requiredOf = (s: Schema): Set<string> => new Set((s.required ?? []) as string[]);
/** A titled schema that is an object or a nullable object: its object part (`maybe(ORG)` names ORG). */
function titledObject(s: Schema): { title: string; schema: Schema } | undefined {
  if (typeof s.title !== 'string' || !IDENT.test(s.title)) return undefined;
  const types = Array.isArray(s.type) ? (s.type as string[]).filter((t) => t !== 'null') : [s.type];
  return types.length === 1 && types[0] === 'object' && s.properties ? { title: s.title, schema: { ...s, type: 'object' } } : undefined;
}

/** Every schema under `s` (itself included), depth first. */
function* schemasIn(s: unknown): Generator<Schema> {
  if (!s || typeof s !== 'object') return;
  if (Array.isArray(s)) {
    for (const x of s) yield* schemasIn(x);
    return;
  }
  yield s as Schema;
  for (const v of Object.values(s)) yield* schemasIn(v);
}

/** A type rendered by `TypeWriter.render`: its text, the named types it uses, and the unnamed shapes in it. */
export interface Rendered {
  text: string;
  refs: Set<string>;
  /** Unnamed object shapes of two or more fields, by their text. */
  shapes: string[];
}

/** A named type: its body and the named types that body uses. */
export interface NamedType {
  body: string;
  refs: Set<string>;
}

/**
 * Writes JSON Schemas as TypeScript, naming each titled shape once. A field is optional
 * unless required: what a client sends (a field with a default may be left out); what a
 * handler receives after validation adds `defaultedFields` (ApiDefaults in api-types.ts).
 */
export class TypeWriter {
  /** Named types by title. */
  readonly named = new Map<string, NamedType>();
  /** The titled object schemas (their object part), candidates for `Base & { … }`. */
  private readonly bases: Array<{ title: string; schema: Schema }> = [];
  private readonly titled = new Map<string, string>();
  /** What the type being written uses: named types, and unnamed shapes. */
  private out: Omit<Rendered, 'text'> = { refs: new Set(), shapes: [] };

  constructor(schemas: Iterable<Schema>) {
    const seen = new Set<string>();
    for (const s of schemas) {
      const t = titledObject(s);
      if (t && !seen.has(t.title) && Object.keys(propsOf(t.schema)).length >= 2) {
        seen.add(t.title);
        this.bases.push(t);
      }
    }
  }

  /** One route part's type (written from column 0). */
  render(s: Schema): Rendered {
    const outer = this.out;
    this.out = { refs: new Set(), shapes: [] };
    try {
      const text = this.type(s, true);
      return { ...this.out, text };
    } finally {
      this.out = outer;
    }
  }

  private type(s: Schema, top = false): string {
    if (typeof s.title === 'string' && IDENT.test(s.title)) return this.namedType(s);
    if (s.const !== undefined) return literal(s.const);
    if (Array.isArray(s.enum)) return union(s.enum.map(literal));
    const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (Array.isArray(alternatives)) {
      const { anyOf: _a, oneOf: _o, ...rest } = s;
      return union(alternatives.map((a) => this.type({ ...rest, ...a })));
    }
    if (Array.isArray(s.type)) return union((s.type as string[]).map((t) => this.type({ ...s, type: t }, top)));
    switch (s.type) {
      case 'string': return 'string';
      case 'integer':
      case 'number': return 'number';
      case 'boolean': return 'boolean';
      case 'null': return 'null';
      case 'array': return `Array<${s.items && typeof s.items === 'object' ? this.type(s.items as Schema) : 'unknown'}>`;
      case 'object': return this.objectType(s, undefined, top);
      default: return s.properties ? this.objectType(s, undefined, top) : 'unknown';
    }
  }

  /** A titled schema: its name, its body written once (a nullable one, `maybe(ORG)`, names its object part). */
  private namedType(s: Schema): string {
    const { title, ...rest } = s as Schema & { title: string };
    if (Array.isArray(rest.type) && rest.type.includes('null')) {
      const types = (rest.type as string[]).filter((t) => t !== 'null');
      return `${this.type({ ...s, type: types.length === 1 ? types[0] : types })} | null`;
    }
    const seen = this.titled.get(title);
    // Its own description is said where it is used (a field's comment), not in its body.
    const { description: _d, ...shapeOf } = rest;
    const shape = canonical(shapeOf);
    if (seen !== undefined && seen !== shape) throw new Error(`two different schemas are titled ${title} (a schema spread from a titled one keeps its title): give one its own`);
    this.out.refs.add(title);
    if (seen === undefined) {
      this.titled.set(title, shape);
      const outer = this.out;
      this.out = { refs: new Set(), shapes: [] };
      try {
        const body = rest.type === 'object' || (!rest.type && rest.properties) ? this.objectType(rest, title, true) : this.type(rest, true);
        this.named.set(title, { body, refs: this.out.refs });
        outer.shapes.push(...this.out.shapes);
      } finally {
        this.out = outer;
      }
    }
    return title;
  }

  /** The titled object with the most fields, all of them fields of `s` alike (its base), if any. */
  private baseOf(s: Schema, title: string | undefined): { title: string; fields: Set<string> } | undefined {
    const props = propsOf(s);
    const required = requiredOf(s);
    let best: { title: string; fields: Set<string> } | undefined;
    for (const b of this.bases) {
      if (b.title === title) continue;
      const fields = Object.entries(propsOf(b.schema));
      // Two alike titled shapes: the later name is the earlier one (never each other's).
      if (fields.length === Object.keys(props).length && title !== undefined && b.title > title) continue;
      const breq = requiredOf(b.schema);
      const fits = fields.every(([k, p]) => props[k] !== undefined && canonical(props[k]) === canonical(p) && breq.has(k) === required.has(k));
      if (fits && fields.length > (best?.fields.size ?? 0)) best = { title: b.title, fields: new Set(fields.map(([k]) => k)) };
    }
    return best;
  }

  private objectType(s: Schema, title: string | undefined, top: boolean): string {
    const required = requiredOf(s);
    const extra = s.additionalProperties;
    const base = this.baseOf(s, title);
    const props = Object.entries(propsOf(s)).filter(([k]) => !base?.fields.has(k));
    if (base) this.namedType(this.bases.find((b) => b.title === base.title)?.schema as Schema);
    if (props.length === 0 && base) return base.title;
    if (props.length === 0) {
      if (extra && typeof extra === 'object') return `Record<string, ${this.type(extra as Schema)}>`;
      return extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
    }
    const lines = props.map(([name, p]) => {
      return `${comment(p.description, '  ')}  ${key(name)}${required.has(name) ? '' : '?'}: ${indented(this.type(p), '  ')};\n`;
    });
    if (extra && typeof extra === 'object') lines.push('  [field: string]: unknown;\n');
    const body = `${base ? `${base.title} & ` : ''}{\n${lines.join('')}}`;
    if (!top && title === undefined && props.length >= 2) this.out.shapes.push(body);
    return body;
  }
}

/**
 * The fields of a query or body that validation fills in when a client leaves them out (their
 * schema has a `default`). Only top-level ones are typed so; a default deeper down is refused.
 */
export function defaultedFields(s: Schema, where: string): string[] {
  const fields = Object.entries(propsOf(s));
  for (const [name, p] of fields) {
    if (subschemas(p).some(hasDefault)) throw new Error(`${where}: a default below the top level (in ${name}) would be typed optional for the handler: move it up or fill it in the handler`);
  }
  return fields.filter(([name, p]) => p.default !== undefined && !requiredOf(s).has(name)).map(([name]) => name);
}

/** The schemas directly inside one: its fields', its items', its alternatives'. */
function subschemas(s: Schema): Schema[] {
  const extra = typeof s.additionalProperties === 'object' ? [s.additionalProperties as Schema] : [];
  const items = s.items && typeof s.items === 'object' ? [s.items as Schema] : [];
  const alternatives = [s.anyOf, s.oneOf, s.allOf].flatMap((a) => (Array.isArray(a) ? (a as Schema[]) : []));
  return [...Object.values(propsOf(s)), ...items, ...alternatives, ...extra];
}
const hasDefault = (s: Schema): boolean => s.default !== undefined || subschemas(s).some(hasDefault);

/** Path or query parameters (OpenAPI lists them one by one) as one object schema. */
export function parameters(op: OpenApiOperation, where: 'path' | 'query'): Schema {
  const list = (op.parameters ?? []).filter((p) => p.in === where);
  return {
    type: 'object',
    properties: Object.fromEntries(list.map((p) => [p.name, { ...p.schema, ...(p.description ? { description: p.description } : {}) }])),
    required: list.filter((p) => p.required).map((p) => p.name),
    additionalProperties: false,
  };
}

export const jsonSchemaOf = (part: { content?: Record<string, { schema?: Schema }> } | undefined): Schema | undefined => part?.content?.['application/json']?.schema;

/** Every schema of the document's routes, for the writer's list of titled shapes. */
export function documentSchemas(doc: OpenApiDocument): Schema[] {
  const ops = Object.values(doc.paths).flatMap((byMethod) => Object.values(byMethod));
  return ops.flatMap((op) => [...schemasIn(op.parameters), ...schemasIn(op.requestBody), ...schemasIn(op.responses)]);
}
