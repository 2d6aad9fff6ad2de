/**
 * The deepest JSON nesting a request body may have. Real requests nest a dozen levels
 * at most (a tool's JSON Schema); thousands of levels would overflow the stack of the
 * recursive JSON.stringify that later touches the body (a 500 instead of a 400).
 */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

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

/** Index of the quote that closes a JSON string whose content starts at `from`, or -1. */
export function stringEnd(text: string, from: number): number {
  for (let q = text.indexOf('"', from); q >= 0; q = text.indexOf('"', q + 1)) {
    let backslashes = 0;
    for (let k = q - 1; k >= from && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return -1;
}
