/**
 * Reading JSON text without parsing it (the request body's depth check, src/lib/json-depth.ts;
 * the chat plugin's reply and stream-chunk scans): the character codes of its structure,
 * its whitespace, and where a string ends.
 */

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The first index from `i` that is not JSON whitespace (space, tab, line feed, carriage return), or the text's length. */
export function skipJsonSpace(s: string, i: number): number {
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return i;
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
