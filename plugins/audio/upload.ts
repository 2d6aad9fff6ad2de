import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';

/** What goes upstream for a file upload: the body is re-opened from disk for every attempt. */
export interface UploadBody {
  contentType: string;
  /** Exact body length, sent as Content-Length so the upstream need not accept chunked uploads. */
  length: number;
  open(): Readable;
}

/** Quotes, CR and LF in a form name or filename, percent-encoded as browsers do. */
function escapeName(name: string): string {
  return name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/**
 * A multipart/form-data body of text fields and one file read from `path`, streamed
 * from disk: the file is never loaded into memory.
 */
export function multipartUpload(
  fields: ReadonlyArray<readonly [string, string]>,
  file: { path: string; size: number; field: string; filename: string; contentType: string },
): UploadBody {
  const boundary = `----tollgate${randomUUID().replace(/-/g, '')}`;
  const head = Buffer.from(
    fields.map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(k)}"\r\n\r\n${v}\r\n`).join('')
      + `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(file.field)}"; filename="${escapeName(file.filename)}"\r\n`
      + `Content-Type: ${file.contentType}\r\n\r\n`,
    'utf8',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + file.size + tail.length,
    open: () => Readable.from((async function* parts() {
      yield head;
      yield* createReadStream(file.path);
      yield tail;
    })(), { objectMode: false }),
  };
}

/** The raw file as the whole body (Deepgram-style uploads). */
export function rawUpload(file: { path: string; size: number }, contentType: string): UploadBody {
  return { contentType, length: file.size, open: () => createReadStream(file.path) };
}

/** Upstreams decide the format by the file name's extension; give one that matches the bytes when it does not. */
export function uploadFilename(filename: string, sniffed: string): string {
  const known = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm', 'aac'];
  const ext = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  if (ext !== undefined && known.includes(ext)) return filename;
  return `${filename.replace(/\.[A-Za-z0-9]*$/, '') || 'audio'}.${sniffed}`;
}
