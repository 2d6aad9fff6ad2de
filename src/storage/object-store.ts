import type { Readable } from 'node:stream';

/** A byte range already resolved against the object's size: inclusive `start`..`end`. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface ObjectBody {
  stream: Readable;
  /** Bytes in this body (the range's length, or the whole object). */
  length: number;
  contentType: string | undefined;
}

/** Private object storage for generated media (S3 or any S3-compatible store). */
export interface ObjectStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  get(key: string, range?: ByteRange): Promise<ObjectBody>;
  /** Deleting a missing object succeeds (S3 semantics), so a retried sweep is idempotent. */
  delete(key: string): Promise<void>;
  /** A short-lived URL to GET the object directly from the store. */
  presignGet(key: string, ttlSeconds: number): Promise<string>;
  ping(): Promise<void>;
  close(): void;
}

/**
 * Parses an HTTP Range header (RFC 9110, single range) against a size:
 * `bytes=a-b`, `bytes=a-`, `bytes=-n`. Returns undefined when there is no usable
 * Range (serve the whole object: also a malformed or reversed one, `bytes=5-2`), or
 * 'unsatisfiable' (416: the range starts past the end).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined; // malformed or multi-range: ignored, as RFC 9110 allows
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  // RFC 9110 §14.1.1: a last-pos below the first-pos makes the range-spec invalid, and an invalid Range is ignored.
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
