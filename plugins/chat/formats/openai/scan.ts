import { CLOSE_ARRAY, CLOSE_OBJECT, COLON, OPEN_ARRAY, OPEN_OBJECT, QUOTE, skipJsonSpace, stringEnd } from '../../../../src/sdk.js';

/**
 * What the OpenAI pass-through stream reads of an upstream chunk without parsing it:
 * a single walk over the JSON text that skips strings with indexOf and looks only at
 * the keys metering needs. Anything it is not sure of (a usage or error chunk, text
 * that is not one whole object) sends the chunk to the full parse instead.
 */
export interface ChunkFacts {
  /** [start, end) of the top-level `model` string value, quotes included (absent when the chunk has none). */
  modelAt: readonly [number, number] | undefined;
  /** Choices of this chunk that deliver something (content, a refusal or tool calls): one token each. */
  delivered: number;
}

const LETTER_N = 0x6e;

/** True when the key whose text is s[start, end) is `name`. */
const keyIs = (s: string, start: number, end: number, name: string): boolean => end - start === name.length && s.startsWith(name, start);

/**
 * The facts of one `chat.completion.chunk`, or undefined when it must be parsed:
 * its `usage` is not null, it has an `error`, or the text is not one balanced JSON
 * object with terminated strings (a malformed event). A choice delivers a token when
 * its `delta` has a non-empty `content` or `refusal` string or a non-empty
 * `tool_calls` array — what the OpenAI dialect counts on the parsed chunk.
 */
export function scanChunk(s: string): ChunkFacts | undefined {
  let i = skipJsonSpace(s, 0);
  if (s.charCodeAt(i) !== OPEN_OBJECT) return undefined;
  let depth = 0;
  let inChoices = false;
  let inDelta = false;
  let counted = false;
  let delivered = 0;
  let modelAt: readonly [number, number] | undefined;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(s, i + 1);
      if (end < 0) return undefined;
      const colon = skipJsonSpace(s, end + 1);
      if (s.charCodeAt(colon) !== COLON) {
        i = end;
        continue;
      }
      const start = i + 1;
      const v = skipJsonSpace(s, colon + 1);
      if (depth === 1) {
        inChoices = keyIs(s, start, end, 'choices');
        if (keyIs(s, start, end, 'model') && s.charCodeAt(v) === QUOTE) {
          const vEnd = stringEnd(s, v + 1);
          if (vEnd < 0) return undefined;
          modelAt = [v, vEnd + 1];
        } else if (keyIs(s, start, end, 'usage') && s.charCodeAt(v) !== LETTER_N) {
          return undefined;
        } else if (keyIs(s, start, end, 'error')) {
          return undefined;
        }
      } else if (inChoices && depth === 3) {
        inDelta = keyIs(s, start, end, 'delta');
      } else if (inChoices && inDelta && depth === 4 && !counted) {
        const text = (keyIs(s, start, end, 'content') || keyIs(s, start, end, 'refusal'))
          && s.charCodeAt(v) === QUOTE && s.charCodeAt(v + 1) !== QUOTE;
        const calls = keyIs(s, start, end, 'tool_calls') && s.charCodeAt(v) === OPEN_ARRAY && s.charCodeAt(skipJsonSpace(s, v + 1)) !== CLOSE_ARRAY;
        if (text || calls) {
          delivered++;
          counted = true;
        }
      }
      i = colon;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth === 3 && inChoices) {
        // A new choice object.
        inDelta = false;
        counted = false;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
      if (depth === 0) return skipJsonSpace(s, i + 1) === s.length ? { modelAt, delivered } : undefined;
      if (depth < 0) return undefined;
    }
  }
  return undefined;
}

/** `data` with the top-level model value at `at` replaced by `model` (a JSON string literal). */
export function replaceModel(data: string, at: readonly [number, number] | undefined, modelJson: string): string {
  if (!at) return data;
  const [start, end] = at;
  if (end - start === modelJson.length && data.startsWith(modelJson, start)) return data;
  return data.slice(0, start) + modelJson + data.slice(end);
}
