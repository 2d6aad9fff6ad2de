import { CLOSE_ARRAY, CLOSE_OBJECT, OPEN_ARRAY, OPEN_OBJECT, QUOTE, stringEnd } from './json-text.js';

/**
 * The deepest JSON nesting a request body may have. Real requests nest a dozen levels
 * at most (a tool's JSON Schema); thousands of levels would overflow the stack of the
 * recursive JSON.stringify that later touches the body (a 500 instead of a 400).
 */
export const MAX_JSON_DEPTH = 128;

/**
 * True when JSON text nests arrays/objects deeper than `max`, checked on the text
 * before parsing. Strings are skipped with indexOf, so a body that is mostly one long
 * string (a base64 image) costs next to nothing; malformed text is left to JSON.parse.
 */
export function jsonNestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i + 1);
      if (end < 0) return false;
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}
