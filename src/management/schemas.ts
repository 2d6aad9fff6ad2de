import { invalidField } from '../lib/errors.js';
/*
 * JSON Schema pieces shared by the management routes. They validate requests (ajv) and
 * serialise responses (fast-json-stringify), and @fastify/swagger turns them into the
 * OpenAPI document, so what the document says is what the server does.
 */

export type JsonSchema = Record<string, unknown>;

const nullable = (s: JsonSchema): JsonSchema => ({ ...s, type: [s.type as string, 'null'] });

export const str = (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...(description ? { description } : {}), ...extra });
export const int = (description?: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...(description ? { description } : {}), ...extra });
export const num = (description?: string): JsonSchema => ({ type: 'number', ...(description ? { description } : {}) });
export const bool = (description?: string): JsonSchema => ({ type: 'boolean', ...(description ? { description } : {}) });
export const time = (description?: string): JsonSchema => str(description, { format: 'date-time' });
export const maybe = nullable;
export const usd = (description: string): JsonSchema => num(`${description} (USD, from an exact sum of micro-USD)`);

/** An object whose listed properties are all present in responses. */
export function obj(properties: Record<string, JsonSchema>, opts: { optional?: readonly string[]; description?: string; title?: string } = {}): JsonSchema {
  const optional = new Set(opts.optional ?? []);
  return {
    // The title names its TypeScript type in the generated api-types (npm run gen:api); a shape used twice needs one.
    ...(opts.title ? { title: opts.title } : {}),
    type: 'object',
    ...(opts.description ? { description: opts.description } : {}),
    properties,
    required: Object.keys(properties).filter((k) => !optional.has(k)),
    additionalProperties: false,
  };
}

/** A request body or query: unknown fields are refused (400 naming them), not dropped. */
export function input(properties: Record<string, JsonSchema>, required: readonly string[] = []): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

export const list = (item: JsonSchema, extra: Record<string, JsonSchema> = {}): JsonSchema =>
  obj({ data: { type: 'array', items: item }, ...extra });

export const ROLE = str('A role in the organization', { enum: ['owner', 'admin', 'member'] });
export const CALLER_ROLE = str('The caller\'s role in the organization (`operator`: an instance operator who is not a member)', {
  enum: ['owner', 'admin', 'member', 'operator'],
});
export const EMAIL = str('Email address', { minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });
export const NAME = str('A name', { minLength: 1, maxLength: 100, pattern: '\\S' });

/** USD amounts in requests: a JSON number (or decimal string) with at most 6 decimals. */
export const USD_INPUT: JsonSchema = {
  description: 'USD amount, at most 6 decimals (micro-USD)',
  anyOf: [{ type: 'number' }, { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]{1,6})?$' }],
};

export const ERROR_BODY = obj({
  error: obj({
    message: str(), type: str(), code: str('Stable error code (docs/errors.md)'), param: maybe(str('The field at fault')),
  }),
}, { description: 'The error body every endpoint uses' });

/** Path parameters, all strings (ids as the lists return them). */
export function params(...names: string[]): JsonSchema {
  return input(Object.fromEntries(names.map((n) => [n, str()])), names);
}

/** A page cursor: the last row's time and id, opaque to clients (base64url of a JSON pair). */
export const encodeCursor = (at: number, id: string): string => Buffer.from(JSON.stringify([at, id])).toString('base64url');

/** A cursor this API returned, read back; anything else is a 400 naming `cursor`. */
export function decodeCursor(text: string): { at: number; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[];
    if (Number.isSafeInteger(at) && typeof id === 'string' && id.length < 100) return { at: at as number, id };
  } catch {
    // the 400 below
  }
  throw invalidField('cursor', '"cursor" is not one this API returned');
}

export const PAGE_LIMIT = (max: number, dflt: number): JsonSchema => int(`Rows per page, 1–${max}`, { minimum: 1, maximum: max, default: dflt });
