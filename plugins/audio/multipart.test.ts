import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/sdk.js';
import { HEAD_BYTES, spoolMultipart, type SpoolOptions } from './multipart.js';

let dir: string;
let opts: SpoolOptions;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-spool-'));
  opts = { dir, fileField: 'file', maxFileBytes: 64 * 1024, maxFieldBytes: 100, maxFields: 4 };
});
afterEach(() => {
  expect(readdirSync(dir)).toEqual([]); // every outcome leaves the spool folder clean
  rmSync(dir, { recursive: true, force: true });
});

const headers = { 'content-type': 'multipart/form-data; boundary=XX' };
const field = (name: string, value: string): string => `--XX\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const fileHead = (name = 'file'): string => `--XX\r\nContent-Disposition: form-data; name="${name}"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
const END = '\r\n--XX--\r\n';

/** Feeds `chunks` into the parser as a request body would arrive. */
function feed(chunks: Array<string | Buffer>, end = true): PassThrough {
  const body = new PassThrough();
  for (const c of chunks) body.write(c);
  if (end) body.end();
  return body;
}

async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

describe('spoolMultipart', () => {
  it('keeps fields in order and writes the file part to disk with its first bytes', async () => {
    const bytes = Buffer.alloc(10_000, 7);
    const form = await spoolMultipart(feed([field('model', 'm'), field('language', 'en'), fileHead(), bytes, END]), headers, opts);
    expect(form.fields).toEqual([['model', 'm'], ['language', 'en']]);
    expect(form.field('language')).toBe('en');
    expect(form.file).toMatchObject({ size: 10_000, filename: 'a.wav', contentType: 'audio/wav' });
    expect(form.file?.head).toHaveLength(HEAD_BYTES);
    expect(readFileSync(form.file?.path ?? '').equals(bytes)).toBe(true);
    await form.dispose();
    await form.dispose(); // idempotent
  });

  it('gives an empty-handed form when there is no file part', async () => {
    const form = await spoolMultipart(feed([field('model', 'm'), '--XX--\r\n']), headers, opts);
    expect(form.file).toBeUndefined();
    expect(form.field('model')).toBe('m');
  });

  it.each([
    ['a file over the limit', [field('model', 'm'), fileHead(), Buffer.alloc(70 * 1024), END], 413, 'body_too_large'],
    ['a field over its limit', [field('prompt', 'x'.repeat(200)), fileHead(), 'abc', END], 400, 'invalid_request'],
    ['a file in another part', [fileHead('other'), 'abc', END], 400, 'invalid_request'],
    ['too many fields', [...['a', 'b', 'c', 'd', 'e'].map((n) => field(n, '1')), END], 400, 'invalid_request'],
    ['a body cut short', [field('model', 'm'), fileHead(), 'abc'], 400, 'invalid_request'],
  ] as const)('refuses %s and removes what it wrote', async (_name, chunks, status, code) => {
    const err = await rejection(spoolMultipart(feed([...chunks]), headers, opts));
    expect([err.status, err.code]).toEqual([status, code]);
  });

  it('refuses a content type without a boundary', async () => {
    const err = await rejection(spoolMultipart(feed(['x']), { 'content-type': 'multipart/form-data' }, opts));
    expect(err.code).toBe('invalid_request');
  });

  it('removes the partial file when the client goes away mid-upload', async () => {
    const body = feed([field('model', 'm'), fileHead(), Buffer.alloc(1000)], false);
    const pending = spoolMultipart(body, headers, opts);
    body.destroy();
    expect((await rejection(pending)).code).toBe('client_closed_request');
  });
});
