import { estimateTokens } from '../../src/sdk.js';
import type { EncodingFormat } from './validate.js';

/** One embedding as an upstream sends it: numbers, or OpenAI's base64 of float32 little-endian bytes. */
export type WireVector = number[] | string;

/** Raw float32 little-endian bytes in base64, the wire form the OpenAI SDKs ask for by default. */
export function floatsToBase64(values: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(values.length * 4);
  for (let i = 0; i < values.length; i++) bytes.writeFloatLE(values[i] ?? 0, i * 4);
  return bytes.toString('base64');
}

/** The numbers of a base64 float32 little-endian vector; undefined when the length is not a multiple of 4. */
export function base64ToFloats(b64: string): number[] | undefined {
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  const out = new Array<number>(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/** A vector in the encoding the client asked for; undefined when the upstream's value is not a vector. */
export function encodeVector(v: unknown, want: EncodingFormat): WireVector | undefined {
  if (typeof v === 'string') return want === 'base64' ? v : base64ToFloats(v);
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number')) return undefined;
  return want === 'base64' ? floatsToBase64(v) : v;
}

/**
 * The list of vectors a response transform extracted. JSONata unwraps a one-element
 * result, so a single vector arrives as a flat number array; it is wrapped back.
 */
export function vectorList(extracted: unknown): unknown[] | undefined {
  if (!Array.isArray(extracted)) return undefined;
  if (extracted.length > 0 && extracted.every((x) => typeof x === 'number')) return [extracted];
  return extracted;
}

/**
 * Tokens counted by the gateway when the upstream reports none (Gemini's embedding
 * methods): about 4 characters a token, at least one per input.
 */
export function estimateInputTokens(texts: readonly string[]): number {
  return texts.reduce((n, t) => n + Math.max(1, estimateTokens(t)), 0);
}

/**
 * The most tokens the input can be: a byte-level BPE token covers at least one UTF-8
 * byte, so the byte count bounds every tokenizer we price (plus one per input for
 * any framing token). What is reserved before the call.
 */
export function tokenBound(texts: readonly string[] | undefined, tokens: readonly number[][] | undefined): number {
  if (tokens) return tokens.reduce((n, t) => n + t.length, 0);
  return (texts ?? []).reduce((n, t) => n + Buffer.byteLength(t, 'utf8') + 1, 0);
}
