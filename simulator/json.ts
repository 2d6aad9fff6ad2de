/** Narrowing helpers for untrusted request JSON, so handlers never need `any`. */

export type JsonObject = Record<string, unknown>;

/** The body as a JSON object, or undefined when it is not valid JSON or not an object. */
export function parseJsonObject(body: Buffer): JsonObject | undefined {
  if (body.length === 0) return undefined;
  try {
    return asObject(JSON.parse(body.toString('utf8')));
  } catch {
    return undefined;
  }
}

export function asObject(value: unknown): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function asArray(value: unknown): readonly unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

/**
 * Characters of text in a message content: a plain string, or an array of parts /
 * blocks whose `text` fields count (OpenAI parts, Anthropic blocks, Gemini parts all
 * use `text`). Images and other media count zero.
 */
export function textChars(content: unknown): number {
  if (typeof content === 'string') return content.length;
  const items = asArray(content);
  if (items === undefined) return 0;
  let total = 0;
  for (const item of items) {
    const text = asObject(item)?.['text'];
    if (typeof text === 'string') total += text.length;
  }
  return total;
}
