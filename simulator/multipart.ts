/**
 * Minimal multipart/form-data reader for the transcription route: enough to find the
 * `file` part's size and the small text fields, without a dependency.
 */

export interface MultipartPart {
  readonly name: string;
  readonly filename?: string;
  readonly contentType?: string;
  readonly data: Buffer;
}

/** The boundary parameter of a multipart content type, or undefined. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !/^multipart\/form-data/i.test(contentType)) return undefined;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m?.[1] ?? m?.[2];
}

/** Splits a multipart body into parts; returns undefined when it is not well formed. */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] | undefined {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) return undefined;
  for (;;) {
    pos += delimiter.length;
    // "--" right after a delimiter marks the end of the body.
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts;
    const headerStart = body.indexOf('\r\n', pos) + 2;
    const headerEnd = body.indexOf('\r\n\r\n', headerStart);
    if (headerStart < 2 || headerEnd < 0) return undefined;
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) return undefined;
    const part = readPart(body.toString('latin1', headerStart, headerEnd), body.subarray(headerEnd + 4, next));
    if (part !== undefined) parts.push(part);
    pos = next + 2;
  }
}

function readPart(rawHeaders: string, data: Buffer): MultipartPart | undefined {
  let name: string | undefined;
  let filename: string | undefined;
  let contentType: string | undefined;
  for (const line of rawHeaders.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-type') contentType = value;
    if (key !== 'content-disposition') continue;
    name = /\bname="([^"]*)"/i.exec(value)?.[1];
    filename = /\bfilename="([^"]*)"/i.exec(value)?.[1];
  }
  if (name === undefined) return undefined;
  return {
    name,
    data,
    ...(filename !== undefined ? { filename } : {}),
    ...(contentType !== undefined ? { contentType } : {}),
  };
}
