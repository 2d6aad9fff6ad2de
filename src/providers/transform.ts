import jsonata from 'jsonata';
import { invalidField } from '../lib/errors.js';

/*
 * Declarative request/response transforms for providers whose wire format is simple
 * body reshaping (a music API's JSON, a TTS vendor's field names). Each value is a
 * JSONata expression, compiled once when the provider file loads; a syntax error is
 * a config error at load, never a request-time surprise.
 *
 * In YAML:
 *   request:
 *     body: '{"text": input, "model_id": model}'     # the upstream JSON body
 *     path: { voice: 'voice' }                        # variables of the path template
 *     query: { output_format: '"mp3_44100_128"' }     # query parameters
 *     headers: { x-thing: '"yes"' }
 *   response:
 *     audio: 'candidates[0].content.parts[inlineData].inlineData.data'
 *     text: '$join(candidates[0].content.parts.text, "\n")'
 */

export interface BuiltRequest {
  /** The JSON-serialised body, when the transform declares one. */
  body: string | undefined;
  pathVars: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
}

export interface CompiledTransforms {
  /** Builds the upstream request from the plugin's input object. */
  request: ((input: unknown) => Promise<BuiltRequest>) | undefined;
  /** Extracts named fields from the parsed upstream response. */
  response: ((upstream: unknown) => Promise<Record<string, unknown>>) | undefined;
}

type Expr = ReturnType<typeof jsonata>;

function compile(source: unknown, where: string): Expr {
  if (typeof source !== 'string' || source.trim() === '') throw new Error(`${where}: must be a JSONata expression string`);
  try {
    return jsonata(source);
  } catch (err) {
    const e = err as { message?: string; position?: number };
    throw new Error(`${where}: ${e.message ?? String(err)}${e.position !== undefined ? ` (at character ${e.position})` : ''}`);
  }
}

function compileMap(map: unknown, where: string): Array<[string, Expr]> {
  if (map === undefined) return [];
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw new Error(`${where}: must be a map of name → expression`);
  return Object.entries(map).map(([k, v]) => [k, compile(v, `${where}.${k}`)]);
}

/** Plain JSON out of a JSONata result (JSONata sequences are arrays with extra flags). */
function plain(value: unknown): unknown {
  // Primitives pass as they are: copying a multi-megabyte base64 string through JSON costs its size again.
  if (value === undefined || value === null || typeof value !== 'object') return value;
  return JSON.parse(JSON.stringify(value)) as unknown;
}

async function evaluateMap(entries: Array<[string, Expr]>, input: unknown): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [k, expr] of entries) {
    const v: unknown = await expr.evaluate(input);
    if (v !== undefined && v !== null) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return out;
}

/** Compiles an endpoint's `request` and `response` blocks; throws an Error naming the faulty key. */
export function compileTransforms(request: unknown, response: unknown): CompiledTransforms {
  let buildRequest: CompiledTransforms['request'];
  if (request !== undefined) {
    if (typeof request !== 'object' || request === null) throw new Error('request: must be a map with body, path, query or headers');
    const spec = request as Record<string, unknown>;
    const unknownKeys = Object.keys(spec).filter((k) => !['body', 'path', 'query', 'headers'].includes(k));
    if (unknownKeys.length > 0) throw new Error(`request: unknown key ${unknownKeys.join(', ')} (allowed: body, path, query, headers)`);
    const body = spec.body === undefined ? undefined : compile(spec.body, 'request.body');
    const path = compileMap(spec.path, 'request.path');
    const query = compileMap(spec.query, 'request.query');
    const headers = compileMap(spec.headers, 'request.headers');
    buildRequest = async (input) => {
      const b = body ? plain(await body.evaluate(input)) : undefined;
      return {
        body: b === undefined ? undefined : JSON.stringify(b),
        pathVars: await evaluateMap(path, input),
        query: await evaluateMap(query, input),
        headers: await evaluateMap(headers, input),
      };
    };
  }
  let extract: CompiledTransforms['response'];
  if (response !== undefined) {
    const fields = compileMap(response, 'response');
    extract = async (upstream) => {
      const out: Record<string, unknown> = {};
      for (const [k, expr] of fields) {
        const v = plain(await expr.evaluate(upstream));
        if (v !== undefined) out[k] = v;
      }
      return out;
    };
  }
  return { request: buildRequest, response: extract };
}

/**
 * A request transform may refuse a request it cannot express upstream by calling
 * JSONata's `$error("…")` (e.g. a response format the provider lacks). Returns that
 * message, meant for the client as a 400; undefined for any other error (a YAML bug).
 */
export function transformRefusal(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'D3137' && typeof e.message === 'string' ? e.message : undefined;
}

/**
 * Runs an endpoint's YAML request transform (`route.endpoint.transforms.request`) on a
 * plugin's input, or resolves undefined when the endpoint has none. A transform that
 * refuses the request with `$error("…")` becomes a 400 carrying its message, on `param`
 * (the client's field it concerns; '' for the request as a whole); nothing has been
 * charged at that point. Any other error is a YAML bug and is thrown as it is.
 */
export async function applyRequestTransform(
  transform: CompiledTransforms['request'], input: Record<string, unknown>, param = '',
): Promise<BuiltRequest | undefined> {
  if (!transform) return undefined;
  try {
    return await transform(input);
  } catch (err) {
    const refusal = transformRefusal(err);
    if (refusal !== undefined) throw invalidField(param, refusal);
    throw err;
  }
}

/** Compiles one JSONata predicate (e.g. `auth.rejected_when`); throws naming `where` on a syntax error. */
export function compilePredicate(source: string, where: string): (input: unknown) => Promise<boolean> {
  const expr = compile(source, where);
  return async (input) => {
    try {
      return (await expr.evaluate(input)) === true;
    } catch {
      return false;
    }
  };
}
