/**
 * Deterministic embedding vectors: the same text always yields the same unit vector,
 * texts with mostly the same words are close (see embedText), and a shorter `dimensions`
 * is the renormalized prefix of the longer one (as with Matryoshka-trained models), so
 * tests can compare results across calls and test similarity search.
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

/** Feature buckets a text is hashed into before it becomes a vector: bounds the work for megabyte inputs. */
const BUCKETS = 1024;
/** Trigrams are taken from the text's start only: enough to tell spellings apart, bounded for long inputs. */
const TRIGRAM_CHARS = 4096;
/** A word weighs this much more than one of the text's character trigrams. */
const TRIGRAM_WEIGHT = 0.15;

/**
 * The text's features, hashed into buckets: each word (lower-cased letters and digits)
 * with weight 1, each character trigram of the lower-cased text's start with a small weight (so
 * punctuation and spelling still move the vector a little).
 */
function features(text: string): Map<number, number> {
  const counts = new Map<number, number>();
  const add = (feature: string, weight: number): void => {
    const b = hash32(feature) % BUCKETS;
    counts.set(b, (counts.get(b) ?? 0) + weight);
  };
  const lower = text.toLowerCase();
  for (const word of lower.split(/[^\p{L}\p{N}]+/u)) if (word) add(`w:${word}`, 1);
  for (let i = 0; i + 3 <= Math.min(lower.length, TRIGRAM_CHARS); i++) add(`t:${lower.slice(i, i + 3)}`, TRIGRAM_WEIGHT);
  if (counts.size === 0) add(`t:${lower}`, 1);
  return counts;
}

/**
 * A unit-length float32 vector of `dims` values for `text`: a bag of words (and, lightly,
 * of character trigrams), each feature bucket contributing a fixed pseudo-random direction.
 * The same text always gives the same vector; texts that share most of their words are
 * close (a reordered or re-punctuated question has a cosine similarity near 1, one with a
 * word or two changed clearly less), so semantic caching can be tested against it; and a
 * shorter `dims` is the renormalized prefix of a longer one (as with Matryoshka models).
 */
export function embedText(text: string, dims: number): Float32Array {
  const out = new Float32Array(dims);
  for (const [bucket, weight] of features(text)) {
    // mulberry32 seeded by the bucket: a tiny PRNG with good enough spread for fake embeddings.
    let state = (bucket + 1) * 0x9e3779b1 || 1;
    for (let i = 0; i < dims; i++) {
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      out[i] = (out[i] ?? 0) + weight * (((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5);
    }
  }
  let norm = 0;
  for (let i = 0; i < dims; i++) norm += (out[i] ?? 0) ** 2;
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
