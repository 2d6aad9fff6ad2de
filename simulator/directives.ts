/**
 * Fault directives for the provider simulator.
 *
 * Tests steer the simulator by embedding markers in the prompt text, because the
 * prompt is the one thing that travels unchanged from a test, through the gateway,
 * to the upstream. Syntax: `[[sim:key]]` or `[[sim:key=value]]`; several settings may
 * share one marker separated by commas, semicolons or spaces
 * (`[[sim:status=503,fail_times=1]]`). `[[sim@<segment>:…]]` scopes a marker to
 * requests whose path starts with `/<segment>/` (e.g. `[[sim@openai:status=500]]`
 * fails only the OpenAI route, so fallback tests can reach a healthy provider).
 */

export interface Directives {
  /** Answer with this HTTP status in the provider's error shape. */
  readonly status?: number;
  /** Wait this long before sending response headers. */
  readonly delayMs?: number;
  /** Wait this long between stream events (0 = write the whole stream at once). */
  readonly chunkDelayMs?: number;
  /** Write a stream in slices of this many bytes, cutting across events (`chunk_bytes`). */
  readonly chunkBytes?: number;
  /** Completion length in words (1 word = 1 token). */
  readonly tokens?: number;
  /** Lyria: make the MP3 about this many megabytes (10^6 bytes). */
  readonly sizeMb?: number;
  /**
   * Report this number, as given (negative, fractional or huge), as the prompt token
   * count (chat, embeddings) or the audio seconds (transcriptions): a provider whose
   * usage is garbage.
   */
  readonly usage?: number;
  /** Apply the fault directives only to the first N matching requests. */
  readonly failTimes?: number;
  /** Parallel tool calls in a reply to a request that declares tools (default 1). */
  readonly toolCalls?: number;
  /** Send a stream's headers, then wait this long before its first byte (a stalled first chunk). */
  readonly bodyDelayMs?: number;
  /** Bedrock: answer with this AWS error type (`aws_error=ModelNotReadyException`), at its status unless `status` names one. */
  readonly awsError?: string;
  /** `echo_placeholders`: the guardrail placeholders of the request (`[EMAIL_1]`, …), which the chat reply starts with, as a model repeating them would. */
  readonly echo?: readonly string[];
  /** Moderations: flag the input. */
  readonly flagged: boolean;
  readonly safetyBlock: boolean;
  readonly safetyFinish: boolean;
  readonly malformed: boolean;
  readonly dropMidStream: boolean;
  readonly streamError: boolean;
  readonly textOnly: boolean;
  readonly hang: boolean;
  readonly echoPlaceholders?: boolean;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export const NO_DIRECTIVES: Directives = Object.freeze({
  flagged: false,
  safetyBlock: false,
  safetyFinish: false,
  malformed: false,
  dropMidStream: false,
  streamError: false,
  textOnly: false,
  hang: false,
});

const MARKER = '[[sim';

/** Bounds keep a typo (delay_ms=3000000) from wedging a test run. */
const NUMERIC: Readonly<Record<string, { key: keyof Directives; min: number; max: number }>> = {
  // 1xx would be an interim response, not an answer, so statuses start at 200.
  status: { key: 'status', min: 200, max: 599 },
  delay_ms: { key: 'delayMs', min: 0, max: 600_000 },
  chunk_delay_ms: { key: 'chunkDelayMs', min: 0, max: 60_000 },
  chunk_bytes: { key: 'chunkBytes', min: 1, max: 16 * 1024 * 1024 },
  tokens: { key: 'tokens', min: 0, max: 100_000 },
  size_mb: { key: 'sizeMb', min: 0, max: 64 },
  usage: { key: 'usage', min: -1e18, max: 1e18 },
  fail_times: { key: 'failTimes', min: 0, max: 1_000_000 },
  tool_calls: { key: 'toolCalls', min: 0, max: 16 },
  body_delay_ms: { key: 'bodyDelayMs', min: 0, max: 600_000 },
};

const FLAGS: Readonly<Record<string, keyof Directives>> = {
  safety_block: 'safetyBlock',
  safety_finish: 'safetyFinish',
  malformed: 'malformed',
  drop_mid_stream: 'dropMidStream',
  stream_error: 'streamError',
  text_only: 'textOnly',
  hang: 'hang',
  flagged: 'flagged',
  echo_placeholders: 'echoPlaceholders',
};

/**
 * Parses every `[[sim…]]` marker in `text`. Unknown keys and out-of-range values are
 * ignored (a simulator must not fail because a test misspelt something); when a key
 * repeats, the last one wins. `scope` is the request's first path segment; markers
 * scoped to another segment are skipped, and scoped markers are skipped when no
 * scope is given.
 */
export function parseDirectives(text: string, scope?: string): Directives {
  if (!text.includes(MARKER)) return NO_DIRECTIVES;
  const out: Mutable<Directives> = { ...NO_DIRECTIVES };
  const re = /\[\[sim(?:@([A-Za-z0-9._-]+))?:([^\]]*)\]\]/g;
  for (const m of text.matchAll(re)) {
    const markerScope = m[1];
    if (markerScope !== undefined && markerScope !== scope) continue;
    for (const setting of (m[2] ?? '').split(/[\s,;]+/)) applySetting(out, setting);
  }
  if (out.echoPlaceholders) out.echo = [...new Set(text.match(/\[[A-Z][A-Z0-9_]*_\d+\]/g) ?? [])];
  return out;
}

function applySetting(out: Mutable<Directives>, setting: string): void {
  if (setting === '') return;
  const eq = setting.indexOf('=');
  const name = (eq < 0 ? setting : setting.slice(0, eq)).toLowerCase().replaceAll('-', '_');
  if (name === 'aws_error' && /^[A-Za-z]+Exception$/.test(setting.slice(eq + 1))) {
    out.awsError = setting.slice(eq + 1);
    return;
  }
  const flag = FLAGS[name];
  if (flag !== undefined && eq < 0) {
    (out as Record<string, unknown>)[flag] = true;
    return;
  }
  const spec = NUMERIC[name];
  if (spec === undefined || eq < 0) return;
  const value = Number(setting.slice(eq + 1));
  if (!Number.isFinite(value) || value < spec.min || value > spec.max) return;
  // status, tokens and counts are integers; size_mb may be fractional, usage is reported as written.
  const normalized = spec.key === 'sizeMb' || spec.key === 'usage' ? value : Math.floor(value);
  (out as Record<string, unknown>)[spec.key] = normalized;
}

/**
 * Directives from a raw request body. The simulator scans the raw bytes rather than
 * the parsed JSON: the marker contains no character JSON escapes, so it appears
 * verbatim, and one `Buffer.indexOf` keeps the no-directive case (every benchmark
 * request) free of per-request parsing work. It also finds markers in multipart
 * fields and in raw audio bodies.
 */
export function directivesFromBody(body: Buffer, scope?: string): Directives {
  if (body.indexOf(MARKER) < 0) return NO_DIRECTIVES;
  return parseDirectives(body.toString('utf8'), scope);
}

/** True when any directive that makes the response fail is set. */
export function hasFault(d: Directives): boolean {
  return (
    (d.status !== undefined && d.status !== 200) ||
    d.awsError !== undefined ||
    d.delayMs !== undefined ||
    d.bodyDelayMs !== undefined ||
    d.safetyBlock ||
    d.safetyFinish ||
    d.malformed ||
    d.dropMidStream ||
    d.streamError ||
    d.textOnly ||
    d.hang
  );
}

/** The same directives with every fault removed (used once `fail_times` is used up). */
export function withoutFaults(d: Directives): Directives {
  const out: Mutable<Directives> = { ...NO_DIRECTIVES };
  if (d.tokens !== undefined) out.tokens = d.tokens;
  if (d.sizeMb !== undefined) out.sizeMb = d.sizeMb;
  if (d.usage !== undefined) out.usage = d.usage;
  if (d.chunkDelayMs !== undefined) out.chunkDelayMs = d.chunkDelayMs;
  if (d.chunkBytes !== undefined) out.chunkBytes = d.chunkBytes;
  if (d.toolCalls !== undefined) out.toolCalls = d.toolCalls;
  if (d.echo !== undefined) out.echo = d.echo;
  out.flagged = d.flagged;
  return out;
}

/**
 * All human-readable text in a parsed request body, joined by newlines: every string
 * value except base64 payloads (`data` keys of inline images/audio), which can be
 * megabytes long and never carry directives.
 */
export function extractText(body: unknown): string {
  const parts: string[] = [];
  collectText(body, parts, 0);
  return parts.join('\n');
}

function collectText(value: unknown, parts: string[], depth: number): void {
  if (depth > 64) return; // guards against pathological nesting
  if (typeof value === 'string') {
    parts.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectText(item, parts, depth + 1);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key !== 'data') collectText(item, parts, depth + 1);
    }
  }
}
