/**
 * Plumbing shared by every simulated provider: request/response types, writers,
 * cancellable pauses and the generic fault directives (delay, hang, status, drop,
 * malformed) so each dialect file only describes its own wire format.
 */

import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Directives } from './directives.js';
import type { SimAws } from './aws-sigv4.js';
import type { GoogleAuthState } from './google-auth.js';
import type { Mp3Cache } from './mp3.js';

export interface SimRequest {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly directives: Directives;
  /** Azure OpenAI's variant of the OpenAI wire format (azure.ts): filter results in every reply. */
  readonly azure?: boolean;
}

/** Per-simulator state handed to handlers (modules themselves hold none). */
export interface SimEnv {
  readonly mp3: Mp3Cache;
  /** Service accounts and the access tokens issued to them (Google's token endpoint, Vertex AI). */
  readonly google: GoogleAuthState;
  /** A short id unique within this simulator instance. */
  nextId(): string;
  /** Microsoft Entra access tokens this simulator issued (azure.ts), with their expiry (ms since the epoch). */
  readonly entraTokens: Map<string, number>;
  /** The simulated AWS account: region and access keys that Bedrock's signature check accepts. */
  readonly aws: SimAws;
}

export type Handler = (req: SimRequest, res: ServerResponse, env: SimEnv) => Promise<void>;

export interface ErrorReply {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Maps a status to that provider's real error body. */
export type ErrorShape = (status: number) => ErrorReply;

export function sendRaw(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string | Buffer,
  headers?: Readonly<Record<string, string>>,
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    ...headers,
    'content-type': contentType,
    'content-length': String(Buffer.byteLength(body)),
  });
  res.end(body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): void {
  sendRaw(res, status, 'application/json', JSON.stringify(body), headers);
}

export function sendError(res: ServerResponse, reply: ErrorReply): void {
  sendJson(res, reply.status, reply.body, reply.headers);
}

/** Resolves true after `ms`, or false as soon as the client goes away. */
export function pause(res: ServerResponse, ms: number): Promise<boolean> {
  if (isGone(res)) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!isGone(res));
    }, ms);
    res.once('close', onClose);
  });
}

/** Resolves when the client closes the connection (or the simulator shuts down). */
function untilClosed(res: ServerResponse): Promise<void> {
  if (isGone(res)) return Promise.resolve();
  return new Promise((resolve) => res.once('close', () => resolve()));
}

function isGone(res: ServerResponse): boolean {
  return res.destroyed || res.socket === null || res.socket.destroyed;
}

/** A 200 whose body is cut off mid-JSON, for testing the gateway's parse errors. */
function sendMalformed(res: ServerResponse, stream: boolean): void {
  if (stream) sendRaw(res, 200, 'text/event-stream', 'data: {"simulated": "malform\n\n');
  else sendRaw(res, 200, 'application/json', '{"simulated": "malform');
}

/**
 * Applies the directives every route shares, in the order a real failure would show
 * them: delay before headers, hang, error status, dropped connection, malformed
 * body. Returns true when the response is settled and the handler must stop.
 * `drop_mid_stream` on a stream is left to the stream writer.
 */
export async function applyFaults(
  res: ServerResponse,
  d: Directives,
  shape: ErrorShape,
  stream: boolean,
): Promise<boolean> {
  if (d.delayMs !== undefined && !(await pause(res, d.delayMs))) return true;
  if (d.hang) {
    await untilClosed(res);
    return true;
  }
  if (d.status !== undefined && d.status !== 200) {
    sendError(res, shape(d.status));
    return true;
  }
  if (d.dropMidStream && !stream) {
    res.destroy();
    return true;
  }
  if (d.malformed) {
    sendMalformed(res, stream);
    return true;
  }
  return false;
}

/**
 * A text-to-speech reply: audio bytes, under the directives that only make sense for
 * audio — `malformed` is text sent with the audio content type, `text_only` a 200 with
 * a JSON body, `drop_mid_stream` half the audio and then a dropped connection.
 */
export async function sendAudio(
  res: ServerResponse,
  d: Directives,
  shape: ErrorShape,
  contentType: string,
  audio: () => Buffer,
  headers?: Readonly<Record<string, string>>,
): Promise<void> {
  if (d.malformed) {
    sendRaw(res, 200, contentType, '{"error":{"message":"simulated: text where audio was expected"}}', headers);
    return;
  }
  if (await applyFaults(res, { ...d, dropMidStream: false }, shape, false)) return;
  if (d.textOnly) {
    sendJson(res, 200, { detail: 'simulated: a JSON answer where audio was expected' }, headers);
    return;
  }
  const bytes = audio();
  if (!d.dropMidStream) {
    sendRaw(res, 200, contentType, bytes, headers);
    return;
  }
  res.writeHead(200, { ...headers, 'content-type': contentType, 'content-length': String(bytes.length) });
  res.write(bytes.subarray(0, bytes.length >> 1), () => res.destroy());
}

export interface StreamPlan {
  readonly contentType: string;
  /** Headers first, then this pause before the first event (`body_delay_ms`). */
  readonly bodyDelayMs?: number;
  /** Pause between events; 0 writes the stream in one go (cheap for benchmarks). */
  readonly chunkDelayMs: number;
  /** Write the stream's bytes in slices of this size, whatever the event boundaries (`chunk_bytes`), pausing `chunkDelayMs` between them. */
  readonly chunkBytes?: number;
  /** Send about half the events, then destroy the socket. */
  readonly drop: boolean;
  /** Send about half the events, then this provider error event, then end. */
  readonly errorEvent?: string;
}

export function streamPlan(d: Directives, contentType: string, errorEvent: string): StreamPlan {
  const base = { contentType, chunkDelayMs: d.chunkDelayMs ?? 0, chunkBytes: d.chunkBytes, drop: d.dropMidStream, bodyDelayMs: d.bodyDelayMs };
  return d.streamError ? { ...base, errorEvent } : base;
}

/** Writes pre-serialized stream events according to `plan`. */
export async function writeEvents(
  res: ServerResponse,
  events: readonly string[],
  plan: StreamPlan,
): Promise<void> {
  const cutShort = plan.drop || plan.errorEvent !== undefined;
  const list = cutShort ? events.slice(0, Math.max(1, Math.floor(events.length / 2))) : [...events];
  if (plan.errorEvent !== undefined && !plan.drop) list.push(plan.errorEvent);
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': plan.contentType, 'cache-control': 'no-cache' });
  if (plan.bodyDelayMs !== undefined) {
    res.flushHeaders();
    if (!(await pause(res, plan.bodyDelayMs))) return;
  }
  if (plan.chunkBytes !== undefined) {
    await writeSlices(res, Buffer.from(list.join('')), plan);
    return;
  }
  if (plan.chunkDelayMs <= 0) {
    finish(res, list.join(''), plan.drop);
    return;
  }
  for (let i = 0; i < list.length - 1; i++) {
    res.write(list[i] ?? '');
    if (!(await pause(res, plan.chunkDelayMs))) return;
  }
  finish(res, list[list.length - 1] ?? '', plan.drop);
}

/**
 * The stream's bytes in slices of `chunkBytes`, each its own socket write: split inside
 * events and inside UTF-8 characters, as TCP may deliver them. Between slices the
 * simulator waits `chunkDelayMs`, or one turn of the event loop and the client's drain.
 */
async function writeSlices(res: ServerResponse, bytes: Buffer, plan: StreamPlan): Promise<void> {
  const size = plan.chunkBytes ?? bytes.length;
  for (let at = 0; at + size < bytes.length; at += size) {
    const drained = res.write(bytes.subarray(at, at + size));
    if (!drained) await new Promise((r) => res.once('drain', r));
    if (!(await pause(res, plan.chunkDelayMs))) return;
    if (plan.chunkDelayMs <= 0) await new Promise((r) => setImmediate(r));
  }
  const tail = bytes.subarray(Math.floor(Math.max(0, bytes.length - 1) / size) * size);
  if (plan.drop) res.write(tail, () => res.destroy());
  else res.end(tail);
}

function finish(res: ServerResponse, last: string, drop: boolean): void {
  // Destroy only once the bytes are handed to the socket, so the client really
  // receives the partial stream before the connection dies.
  if (drop) res.write(last, () => res.destroy());
  else res.end(last);
}

export class BodyTooLargeError extends Error {}

/** Reads the whole request body, failing past `limit` bytes or if the client leaves. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new BodyTooLargeError(`request body over ${limit} bytes`));
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('client closed the request'));
    });
  });
}

/** Bearer token from an Authorization header, or undefined. */
export function bearer(headers: IncomingHttpHeaders): string | undefined {
  return authScheme(headers, 'bearer');
}

/** The credential after `scheme` (case-insensitive) in the Authorization header. */
export function authScheme(headers: IncomingHttpHeaders, scheme: string): string | undefined {
  const value = headers.authorization;
  if (value === undefined) return undefined;
  const space = value.indexOf(' ');
  if (space < 0 || value.slice(0, space).toLowerCase() !== scheme) return undefined;
  const key = value.slice(space + 1).trim();
  return key === '' ? undefined : key;
}

/** The single value of a header (first one when repeated), or undefined when empty. */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

/** Test keys: `invalid` and anything starting with `bad-` are rejected upstream. */
export function isRejectedKey(key: string): boolean {
  return key === 'invalid' || key.startsWith('bad-');
}
