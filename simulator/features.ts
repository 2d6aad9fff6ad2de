/**
 * Reply features the chat wire formats share: tool calls (which tools a reply calls,
 * with arguments made from their JSON Schemas), JSON replies for a requested schema,
 * and token log probabilities — deterministic, so tests can predict them exactly.
 */

import type { Directives } from './directives.js';
import { asArray, asObject, asString, type JsonObject } from './json.js';

/** A function a request declares, in any wire format: its name and the JSON Schema of its arguments. */
export interface DeclaredTool {
  readonly name: string;
  readonly schema: unknown;
}

/** A tool call the simulated model makes. */
export interface PlannedCall {
  readonly name: string;
  /** The arguments, serialised (what OpenAI sends). */
  readonly arguments: string;
  readonly args: JsonObject;
}

/** An example value for a JSON Schema: the first enum value, or a fixed value of its type; objects fill every property. */
export function exampleFor(schema: unknown, depth = 0): unknown {
  const s = asObject(schema);
  if (s === undefined || depth > 8) return 'sim';
  const enumValues = asArray(s['enum']);
  if (enumValues !== undefined && enumValues.length > 0) return enumValues[0];
  const type = Array.isArray(s['type']) ? asString(s['type'][0]) : asString(s['type']);
  switch (type?.toLowerCase()) {
    case 'object': {
      const props = asObject(s['properties']) ?? {};
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, exampleFor(v, depth + 1)]));
    }
    case 'array': return [exampleFor(s['items'], depth + 1)];
    case 'integer':
    case 'number': return 1;
    case 'boolean': return true;
    case 'null': return null;
    case undefined: return asObject(s['properties']) ? exampleFor({ ...s, type: 'object' }, depth) : 'sim';
    default: return 'sim';
  }
}

/**
 * The calls a reply makes: none when no tool is declared, when tool choice is none,
 * or when the conversation ends with tool results (the model answers them in text);
 * otherwise `[[sim:tool_calls=N]]` calls (default 1) to the declared tools in order
 * (the named one when the choice names it).
 */
export function plannedCalls(tools: readonly DeclaredTool[], opts: { choiceNone: boolean; named?: string; answeredTools: boolean; d: Directives }): PlannedCall[] {
  if (tools.length === 0 || opts.choiceNone || opts.answeredTools) return [];
  const pool = opts.named !== undefined ? tools.filter((t) => t.name === opts.named) : tools;
  const count = Math.min(opts.d.toolCalls ?? 1, pool.length);
  return pool.slice(0, count).map((t) => {
    const value = exampleFor(t.schema);
    const args = asObject(value) ?? {};
    return { name: t.name, args, arguments: JSON.stringify(args) };
  });
}

/** The reply text for a JSON response format: an example of the schema, or a fixed object. */
export function jsonReply(schema: unknown): string {
  return JSON.stringify(schema === undefined ? { reply: 'This is a simulated reply.' } : exampleFor(schema));
}

/** Splits a string into `n` roughly equal pieces (at least one), for streaming. */
export function pieces(text: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, n)));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [''];
}

/** OpenAI-style log probabilities for reply pieces: a fixed logprob per token, and `top` alternatives. */
export function logprobsFor(tokens: readonly string[], top: number): JsonObject[] {
  return tokens.map((token, i) => ({
    token, logprob: -0.01 * (i + 1), bytes: [...Buffer.from(token)],
    top_logprobs: Array.from({ length: top }, (_, k) => ({ token: k === 0 ? token : `${token}~${k}`, logprob: -0.01 * (i + 1) - k, bytes: [...Buffer.from(token)] })),
  }));
}
