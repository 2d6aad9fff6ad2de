import { jsonTextSlots, type ModelRequest, type TextSlot, type UnsupportedParamsPolicy } from '../../src/sdk.js';
import type { UnsupportedParam } from './unsupported.js';
import type { Reasoning } from './reasoning.js';

/** A message of the canonical (OpenAI chat) request. */
export interface ChatMessage {
  role: string;
  content: unknown;
  [key: string]: unknown;
}

/** A request feature a translation cannot carry, and the field that holds it. */
export interface Untranslatable {
  param: string;
  message: string;
}

/**
 * A validated chat request, whatever endpoint it came in on. `body` is always the
 * OpenAI chat form (the canonical form every dialect translates from); a request that
 * arrived in another client format also keeps its original body in `native`, so a
 * provider speaking that same format gets it untouched.
 */
export interface ChatRequest extends ModelRequest {
  body: Record<string, unknown> & { messages: ChatMessage[] };
  stream: boolean;
  /** The client asked for usage in the stream (OpenAI `stream_options.include_usage`). */
  includeUsage: boolean;
  maxTokens: number | undefined;
  /** Choices asked for (OpenAI `n`; 1 when absent): each is a completion, the prompt is billed once. */
  choices?: number;
  /** Upper bound of the prompt's tokens, for the credit reservation. */
  promptBound: number;
  native?: NativeRequest;
  /** The reasoning the client asked for, in any format's terms (reasoning.ts); each dialect writes it in its own. */
  reasoning?: Reasoning;
  /** Set when the canonical form lost something of the native request that no policy may drop (e.g. document blocks): a 400 off its own format. */
  untranslatable?: Untranslatable;
  /** Parameters the canonical form does not carry as written, which the route's `unsupported_params` policy translates, drops or refuses (unsupported.ts). */
  unsupported?: UnsupportedParam[];
  /** The key's project's `unsupported_params` (read at parse), over gateway.yaml's and the route's (unsupported.ts `policyOf`). */
  projectPolicy?: UnsupportedParamsPolicy;
}

/** The request as the client sent it in a non-OpenAI format, with the headers that steer it. */
export interface NativeRequest {
  format: 'anthropic' | 'responses' | 'gemini';
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** The most choices a request may ask for (OpenAI's own bound on `n`; Gemini's candidateCount too). */
export const MAX_CHOICES = 128;

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text a guardrail sees: the body as the client wrote it, and the canonical form translated from it (a copy, masked alike). */
export function chatTexts(req: ChatRequest): TextSlot[] {
  return req.native ? [...jsonTextSlots(req.native.body), ...jsonTextSlots(req.body, true)] : jsonTextSlots(req.body);
}

/** Text of a content value: a string, or the `text` of each part/block. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const p of content) if (isObject(p) && typeof p.text === 'string') parts.push(p.text);
  return parts.join('\n');
}

/** The text of every message, for the request log. */
export function promptText(contents: readonly unknown[]): string {
  return contents.map(contentText).filter((t) => t.length > 0).join('\n');
}

/** Tokens assumed for one image or audio part: above what any provider charges per image. */
export const MEDIA_TOKEN_BOUND = 8192;
/** Tokens a provider may add to a prompt that declares tools (Anthropic's tool-use system prompt is ~350). */
export const TOOLS_TOKEN_BOUND = 1024;
const MEDIA_TYPES = new Set(['image_url', 'image', 'input_audio', 'document', 'file', 'input_image', 'input_file']);
/**
 * Text in a JSON serialisation without which `promptTokenBound`'s replacer changes nothing:
 * a media type value (`"image…`, `"input_…`, `"document"`, `"file"`), an `inlineData` or
 * `file_data` key, a `data` key or a string starting with `data:` (both `"data…`).
 */
const MAYBE_MEDIA = /"(?:data|file_data"|inlineData"|image|input_|document"|file")/;

/**
 * Upper bound of the prompt tokens of request parts (messages, system) and tools: every
 * token covers at least one byte of text (byte-level BPE), and the JSON around that
 * text only adds bytes, so the UTF-8 size of the JSON without media bytes bounds the
 * text; each media part adds MEDIA_TOKEN_BOUND (or its base64 size for documents),
 * and declared tools add TOOLS_TOKEN_BOUND for the prompt providers wrap around them.
 *
 * `bodyText`, the JSON text of the whole request that holds these parts and tools as the
 * client sent it, is taken as that serialisation when it has no media: it holds each of
 * them in at least as many bytes as `JSON.stringify` writes (escapes and whitespace only
 * add; a duplicated key adds both copies) plus the request's other fields, so its size
 * is a bound too, without serialising a long conversation again.
 */
export function promptTokenBound(parts: readonly unknown[], tools: unknown = null, bodyText?: string): number {
  const toolPrompt = Array.isArray(tools) && tools.length > 0 ? TOOLS_TOKEN_BOUND : 0;
  if (bodyText !== undefined && !MAYBE_MEDIA.test(bodyText)) return Buffer.byteLength(bodyText, 'utf8') + toolPrompt + 3;
  // Plain text (no media part, no `data` string) is what the replacer below would give unchanged:
  // stringified once without it (V8's fast path), the same bound.
  const plain = JSON.stringify([parts, tools]) ?? '';
  if (!MAYBE_MEDIA.test(plain)) return Buffer.byteLength(plain, 'utf8') + toolPrompt + 3;
  let media = 0;
  const json = JSON.stringify([parts, tools], (key, value: unknown) => {
    if (isObject(value) && typeof value.type === 'string' && MEDIA_TYPES.has(value.type)) {
      const size = value.type === 'document' || value.type === 'file' || value.type === 'input_file' ? JSON.stringify(value).length : 0;
      media += Math.max(MEDIA_TOKEN_BOUND, size);
    }
    if (key === 'inlineData' && isObject(value)) media += MEDIA_TOKEN_BOUND; // Gemini parts carry no type
    if (typeof value === 'string' && (key === 'data' || key === 'file_data' || value.startsWith('data:'))) return '';
    return value;
  }) ?? '';
  return Buffer.byteLength(json, 'utf8') + media + toolPrompt + 3;
}
