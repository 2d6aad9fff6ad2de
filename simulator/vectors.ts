/**
 * Deterministic embedding vectors: the same text always yields the same unit vector,
 * and a shorter `dimensions` is the renormalized prefix of the longer one (as with
 * Matryoshka-trained models), so tests can compare results across calls.
 */

/** 32-bit FNV-1a over UTF-16 code units: cheap and stable across runs. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A unit-length float32 vector of `dims` values seeded by `text`. */
export function embedText(text: string, dims: number): Float32Array {
  const out = new Float32Array(dims);
  let state = hash32(text) || 1;
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    // mulberry32: a tiny PRNG with good enough spread for fake embeddings.
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    const value = ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
    out[i] = value;
    norm += value * value;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < dims; i++) out[i] = (out[i] ?? 0) * scale;
  return out;
}

/** Plain numbers rounded to 8 decimals, the precision real APIs print. */
export function toFloatList(vec: Float32Array): number[] {
  const out = new Array<number>(vec.length);
  for (let i = 0; i < vec.length; i++) out[i] = Math.round((vec[i] ?? 0) * 1e8) / 1e8;
  return out;
}

/** Raw float32 little-endian bytes in base64 (OpenAI `encoding_format: "base64"`). */
export function toBase64(vec: Float32Array): string {
  const bytes = Buffer.alloc(vec.length * 4);
  for (let i = 0; i < vec.length; i++) bytes.writeFloatLE(vec[i] ?? 0, i * 4);
  return bytes.toString('base64');
}
