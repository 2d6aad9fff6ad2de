import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Busboy, type BusboyFileStream, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import { GatewayError, invalidField } from '../../src/sdk.js';

/** Bytes kept from the start of the file, to recognise its format and read its header. */
export const HEAD_BYTES = 4096;

/** An uploaded file written to a temp file as it arrived, never held whole in memory. */
export interface SpooledFile {
  readonly path: string;
  readonly size: number;
  readonly filename: string;
  /** The part's Content-Type as the client declared it. */
  readonly contentType: string;
  /** The first HEAD_BYTES bytes. */
  readonly head: Buffer;
}

/** A parsed multipart/form-data body: its text fields in order and at most one spooled file. */
export class MultipartForm {
  private disposed: Promise<void> | undefined;

  constructor(readonly fields: ReadonlyArray<readonly [string, string]>, readonly file: SpooledFile | undefined) {}

  /** The last value of a text field. */
  field(name: string): string | undefined {
    for (let i = this.fields.length - 1; i >= 0; i--) if (this.fields[i]?.[0] === name) return this.fields[i]?.[1];
    return undefined;
  }

  /** Removes the temp file; safe to call more than once and from several places. */
  dispose(): Promise<void> {
    this.disposed ??= this.file ? rm(this.file.path, { force: true }) : Promise.resolve();
    return this.disposed;
  }
}

export interface SpoolOptions {
  /** Folder of the temp files (created by the caller, removed at shutdown). */
  dir: string;
  /** The one file part accepted. */
  fileField: string;
  maxFileBytes: number;
  maxFieldBytes: number;
  maxFields: number;
}

const malformed = (err: unknown): GatewayError =>
  invalidField('', `The multipart/form-data body is malformed: ${err instanceof Error ? err.message : String(err)}`);

/**
 * Reads a multipart/form-data body: text fields into memory (size-capped), the file
 * part streamed to a temp file under `dir` (413 past `maxFileBytes`). On any failure
 * the temp file is removed and the rest of the body is drained, so the error can be
 * answered on the same connection.
 */
export function spoolMultipart(payload: Readable, headers: IncomingHttpHeaders, opts: SpoolOptions): Promise<MultipartForm> {
  let bb: BusboyInstance;
  try {
    bb = Busboy({
      headers: headers as BusboyHeaders,
      limits: { fileSize: opts.maxFileBytes, fieldSize: opts.maxFieldBytes, fields: opts.maxFields, files: 1, parts: opts.maxFields + 1 },
    });
  } catch (err) {
    payload.resume();
    return Promise.reject(malformed(err));
  }
  return new Promise((resolve, reject) => {
    const fields: Array<[string, string]> = [];
    let writing: Promise<SpooledFile> | undefined;
    let fileStream: BusboyFileStream | undefined;
    let settled = false;
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      payload.unpipe(bb);
      payload.resume();
      // A file still being written fails and removes itself; a finished one is removed
      // here. The error is reported once nothing is left on disk.
      fileStream?.destroy(new Error('form rejected'));
      const removed = writing ? writing.then((f) => rm(f.path, { force: true }), () => undefined) : Promise.resolve();
      void removed.then(() => reject(err instanceof GatewayError ? err : malformed(err)));
    };
    bb.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (valueTruncated) fail(invalidField(name, `The form field ${name} is over ${opts.maxFieldBytes} bytes`));
      else fields.push([name, value]);
    });
    bb.on('file', (name, stream, filename, _encoding, mimeType) => {
      if (name !== opts.fileField) {
        stream.resume();
        fail(invalidField(name, `Unexpected file part "${name}"; send the audio as the "${opts.fileField}" part`));
        return;
      }
      fileStream = stream;
      writing = spoolFile(stream, join(opts.dir, randomUUID()), opts.maxFileBytes).then((f) => ({ ...f, filename, contentType: mimeType }));
      writing.catch(fail);
    });
    const tooMany = (): void => fail(invalidField('', `The form has more than ${opts.maxFields} fields or more than one file`));
    bb.on('fieldsLimit', tooMany);
    bb.on('filesLimit', tooMany);
    bb.on('partsLimit', tooMany);
    bb.on('error', fail);
    bb.on('finish', () => {
      (writing ?? Promise.resolve(undefined)).then((file) => {
        const form = new MultipartForm(fields, file);
        if (settled) {
          void form.dispose();
          return;
        }
        settled = true;
        resolve(form);
      }, fail);
    });
    payload.once('error', fail);
    payload.once('close', () => {
      if (!payload.readableEnded) fail(new GatewayError('client_closed_request'));
    });
    payload.pipe(bb);
  });
}

/**
 * Streams one file part to `path`, keeping its first bytes. Rejects with 413 when
 * busboy cuts the file at the limit; on any failure the partial file is removed
 * once its descriptor is closed.
 */
async function spoolFile(stream: BusboyFileStream, path: string, maxBytes: number): Promise<{ path: string; size: number; head: Buffer }> {
  const head: Buffer[] = [];
  let headLength = 0;
  let size = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (headLength < HEAD_BYTES) {
        const piece = chunk.subarray(0, HEAD_BYTES - headLength);
        head.push(piece);
        headLength += piece.length;
      }
      done(null, chunk);
    },
  });
  const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
  const closed = new Promise<void>((resolve) => out.once('close', () => resolve()));
  const cut = new AbortController();
  stream.once('limit', () => cut.abort());
  try {
    await pipeline(stream, meter, out, { signal: cut.signal });
  } catch (err) {
    out.destroy();
    await closed;
    await rm(path, { force: true });
    throw cut.signal.aborted ? new GatewayError('body_too_large', [maxBytes]) : err;
  }
  return { path, size, head: Buffer.concat(head) };
}
