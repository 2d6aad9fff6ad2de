import { CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE, skipJsonSpace } from '../../../src/sdk.js';
import type { TokenUsage } from '../dialects/types.js';
import type { ChatCost } from '../metering.js';
import type { PassedReply } from './types.js';

/**
 * What a non-streamed pass-through reads of an upstream reply without parsing it: one
 * validating walk over the JSON text that builds no objects. Strings and numbers are
 * matched by sticky regular expressions (compiled to native code: escapes, control
 * characters and number syntax are checked as JSON.parse checks them); structure is a
 * stack of open containers. The result is where each top-level member's value lies,
 * so the caller splices the few it owns and forwards the rest as the upstream wrote it.
 * Text JSON.parse would refuse, or that is not one object, gives undefined.
 */

/** A JSON string: no raw control characters, only JSON's escapes. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON refuses raw in a string; matching them is the point
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

/** Deeper nesting than this is left to the full parse (and its own limits). */
const MAX_DEPTH = 256;

/** The end of the token (string, number or literal) at `i`, or -1 when there is none valid. */
function tokenEnd(s: string, i: number): number {
  const c = s.charCodeAt(i);
  const re = c === QUOTE ? STRING : c === 0x2d || (c >= 0x30 && c <= 0x39) ? NUMBER : LITERAL;
  re.lastIndex = i;
  return re.test(s) ? re.lastIndex : -1;
}

/** [start, end) of one top-level member's value in the text. */
export type Span = readonly [number, number];

/**
 * The spans of the top-level members named in `wanted` (the last of a repeated key, as
 * JSON.parse keeps it), or undefined when `s` is not exactly one valid JSON object.
 */
export function scanReply(s: string, wanted: readonly string[]): Map<string, Span> | undefined {
  const found = new Map<string, Span>();
  let i = skipJsonSpace(s, 0);
  if (s.charCodeAt(i) !== OPEN_OBJECT) return undefined;
  /** Open containers, innermost last: true for an object. */
  const open: boolean[] = [];
  /** The top-level key whose value is being read (set while depth is 1 and a wanted key's value starts). */
  let member: string | undefined;
  let memberStart = 0;
  // Each turn reads one value at `i`, then what follows it (a comma, a close, the end).
  for (;;) {
    const c = s.charCodeAt(i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (open.length >= MAX_DEPTH) return undefined;
      open.push(c === OPEN_OBJECT);
      i = skipJsonSpace(s, i + 1);
      const close = c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
      if (s.charCodeAt(i) === close) {
        open.pop();
        i++;
      } else {
        if (c === OPEN_OBJECT && (i = key(i)) < 0) return undefined;
        continue;
      }
    } else {
      const end = tokenEnd(s, i);
      if (end < 0) return undefined;
      i = end;
    }
    // After a value: close containers, or a comma and the next member or element.
    for (;;) {
      if (open.length === 1 && member !== undefined) {
        found.set(member, [memberStart, i]);
        member = undefined;
      }
      i = skipJsonSpace(s, i);
      if (open.length === 0) return i === s.length ? found : undefined;
      const inObject = open[open.length - 1];
      const d = s.charCodeAt(i);
      if (d === COMMA) {
        i = skipJsonSpace(s, i + 1);
        if (inObject && (i = key(i)) < 0) return undefined;
        break;
      }
      if (d !== (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) return undefined;
      open.pop();
      i++;
    }
  }

  /** Reads `"key" :` at `i`; returns where its value starts, or -1. */
  function key(at: number): number {
    if (s.charCodeAt(at) !== QUOTE) return -1;
    const end = tokenEnd(s, at);
    if (end < 0) return -1;
    const colon = skipJsonSpace(s, end);
    if (s.charCodeAt(colon) !== COLON) return -1;
    const value = skipJsonSpace(s, colon + 1);
    if (open.length === 1) {
      // A top-level key written with escapes may spell a wanted one: left to the full parse.
      const name = s.slice(at + 1, end - 1);
      if (name.includes('\\')) return -1;
      if (wanted.includes(name)) {
        member = name;
        memberStart = value;
      }
    }
    return value;
  }
}

/** `s` with each span replaced by its text (spans in any order, not overlapping). */
function splice(s: string, edits: ReadonlyArray<readonly [Span, string]>): string {
  const sorted = [...edits].sort((a, b) => a[0][0] - b[0][0]);
  let out = '';
  let pos = 0;
  for (const [[start, end], text] of sorted) {
    out += s.slice(pos, start) + text;
    pos = end;
  }
  return out + s.slice(pos);
}

/** Whether the value at `span` is a string / an object / an array. */
const isStringAt = (s: string, span: Span | undefined): span is Span => span !== undefined && s.charCodeAt(span[0]) === QUOTE;
const isObjectAt = (s: string, span: Span | undefined): span is Span => span !== undefined && s.charCodeAt(span[0]) === OPEN_OBJECT;
const isArrayAt = (s: string, span: Span | undefined): span is Span => span !== undefined && s.charCodeAt(span[0]) === OPEN_ARRAY;

/** What a format's pass-through needs to know of its replies beyond their `model` and `usage` members. */
export interface PassedShape<U> {
  /** The top-level array every reply of the format has (`choices`, `content`): a body without it takes the parse. */
  list: string;
  /** The upstream's parsed `usage` in the gateway's terms (undefined: the reply takes the parse); throws InvalidUsage. */
  usage(upstream: U): TokenUsage | undefined;
  /** The `usage` the client gets: the upstream's with the gateway's cost fields (`upstream` is this reply's own parse). */
  withCost(upstream: U, usage: TokenUsage, cost: ChatCost): object;
}

/**
 * A format's pass-through: the reply its `response` and `render` would give — the requested
 * model (`modelJson`, a JSON string literal), the usage completed with its cost — spliced
 * into the upstream's text (only `usage` is parsed); undefined when the scan is not sure of the body.
 */
export function passReply<U>(shape: PassedShape<U>): (body: string, modelJson: string) => PassedReply | undefined {
  const members = ['model', 'usage', shape.list];
  return (body, modelJson) => {
    const at = scanReply(body, members);
    const modelAt = at?.get('model');
    const usageAt = at?.get('usage');
    if (!at || !isArrayAt(body, at.get(shape.list)) || !isStringAt(body, modelAt) || !isObjectAt(body, usageAt)) return undefined;
    const upstreamUsage = JSON.parse(body.slice(usageAt[0], usageAt[1])) as U;
    const usage = shape.usage(upstreamUsage);
    if (!usage) return undefined;
    return {
      usage,
      text: (u, c) => splice(body, [[modelAt, modelJson], [usageAt, JSON.stringify(shape.withCost(upstreamUsage, u, c))]]),
    };
  };
}
