/** Keys whose string values are a reply's text in every client format (OpenAI, Anthropic, Responses, Gemini). */
const TEXT_KEYS = new Set(['content', 'text', 'delta', 'output_text', 'arguments', 'refusal', 'reasoning_content', 'thinking', 'partial_json']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function collect(value: unknown, key: string, out: string[]): void {
  if (typeof value === 'string') {
    if (TEXT_KEYS.has(key)) out.push(value);
  } else if (Array.isArray(value)) {
    for (const v of value) collect(v, key, out);
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) collect(v, k, out);
  }
}

/** The text of a reply's JSON body, whatever its format (a guardrail sees text, not a format). */
export function jsonReplyText(json: string): string {
  const out: string[] = [];
  try {
    collect(JSON.parse(json) as unknown, '', out);
  } catch {
    return json;
  }
  return out.join('');
}

/** The text of SSE frames (`data:` lines holding JSON), whatever their format. */
export function sseReplyText(frames: string): string {
  const out: string[] = [];
  for (const line of frames.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '' || data === '[DONE]') continue;
    try {
      collect(JSON.parse(data) as unknown, '', out);
    } catch {
      // A frame that is not JSON carries no text of the reply.
    }
  }
  return out.join('');
}
