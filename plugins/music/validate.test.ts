import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/sdk.js';
import { MAX_IMAGES, MAX_PROMPT_CHARS, musicBodyLimit, parseMusicRequest } from './validate.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const png = `data:image/png;base64,${PNG.toString('base64')}`;
const MAX_BYTES = 1024;

function refusal(body: unknown): { param: string | null | undefined; message: string } {
  try {
    parseMusicRequest(body, MAX_BYTES);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as GatewayError;
    expect(e.status).toBe(400);
    return { param: e.extras.param, message: e.message };
  }
  throw new Error('expected a 400');
}

describe('parseMusicRequest', () => {
  it('takes a minimal request: vocals by default, mp3, no images', () => {
    expect(parseMusicRequest({ model: 'tune-3-clip-preview', prompt: 'Warm lofi' }, MAX_BYTES)).toEqual({
      model: 'tune-3-clip-preview', prompt: 'Warm lofi', instrumental: false, lyrics: undefined, responseFormat: 'mp3', images: [],
    });
  });

  it('keeps lyrics for a sung track and drops them for an instrumental or blank ones', () => {
    expect(parseMusicRequest({ model: 'm', prompt: 'p', lyrics: 'la la' }, MAX_BYTES).lyrics).toBe('la la');
    expect(parseMusicRequest({ model: 'm', prompt: 'p', lyrics: 'la la', instrumental: true }, MAX_BYTES)).toMatchObject({ instrumental: true, lyrics: undefined });
    expect(parseMusicRequest({ model: 'm', prompt: 'p', lyrics: '  \n' }, MAX_BYTES).lyrics).toBeUndefined();
  });

  it('decodes data-URL images now and leaves https URLs to fetch later, each with its field', () => {
    const r = parseMusicRequest({ model: 'm', prompt: 'p', reference_images: [png, { url: 'https://img.example/a.jpg' }] }, MAX_BYTES);
    expect(r.images).toEqual([
      { kind: 'inline', mimeType: 'image/png', data: PNG, param: 'reference_images[0]' },
      { kind: 'url', url: 'https://img.example/a.jpg', param: 'reference_images[1]' },
    ]);
  });

  it('counts the prompt in characters, not UTF-16 units', () => {
    expect(parseMusicRequest({ model: 'm', prompt: '🎵'.repeat(MAX_PROMPT_CHARS) }, MAX_BYTES).prompt).toHaveLength(MAX_PROMPT_CHARS * 2);
    expect(refusal({ model: 'm', prompt: 'x'.repeat(MAX_PROMPT_CHARS + 1) }).param).toBe('prompt');
  });

  it.each([
    ['not an object', [1], null],
    ['an unknown field, named', { model: 'm', prompt: 'p', duration: 30 }, 'duration'],
    ['no model', { prompt: 'p' }, 'model'],
    ['an empty model', { model: '', prompt: 'p' }, 'model'],
    ['a blank prompt', { model: 'm', prompt: '   ' }, 'prompt'],
    ['a format other than mp3', { model: 'm', prompt: 'p', response_format: 'wav' }, 'response_format'],
    ['instrumental as a string', { model: 'm', prompt: 'p', instrumental: 'yes' }, 'instrumental'],
    ['lyrics as a list', { model: 'm', prompt: 'p', lyrics: ['la'] }, 'lyrics'],
    ['reference_images as one string', { model: 'm', prompt: 'p', reference_images: png }, 'reference_images'],
    ['too many images', { model: 'm', prompt: 'p', reference_images: Array.from({ length: MAX_IMAGES + 1 }, () => png) }, 'reference_images'],
    ['an image that is no URL', { model: 'm', prompt: 'p', reference_images: [png, 42] }, 'reference_images[1]'],
    ['an ftp image', { model: 'm', prompt: 'p', reference_images: ['ftp://x/a.png'] }, 'reference_images[0]'],
    ['a data URL that is not an image', { model: 'm', prompt: 'p', reference_images: ['data:text/plain;base64,aGk='] }, 'reference_images[0]'],
    ['a PNG data URL holding other bytes', { model: 'm', prompt: 'p', reference_images: ['data:image/png;base64,R0lGODlh'] }, 'reference_images[0]'],
    ['an image over the byte cap', { model: 'm', prompt: 'p', reference_images: [`data:image/png;base64,${Buffer.concat([PNG, Buffer.alloc(MAX_BYTES)]).toString('base64')}`] }, 'reference_images[0]'],
  ])('refuses %s with 400 naming the field', (_name, body, param) => {
    expect(refusal(body).param).toBe(param);
  });
});

describe('musicBodyLimit', () => {
  it('fits 10 images of the largest size as base64 data URLs with the longest prompt, and not much more', () => {
    const max = 8 * 1024 * 1024;
    const image = `data:image/jpeg;base64,${'A'.repeat(4 * Math.ceil(max / 3))}`;
    const text = JSON.stringify({ model: 'tune-3-pro-preview', prompt: '\u{1F3B5}'.repeat(MAX_PROMPT_CHARS), lyrics: 'la '.repeat(10_000), reference_images: [] });
    // The JSON text of that body with 10 such images: each image quoted, commas between them.
    const fullest = Buffer.byteLength(text) + MAX_IMAGES * (image.length + 2) + MAX_IMAGES - 1;
    expect(fullest).toBeLessThan(musicBodyLimit(max));
    expect(musicBodyLimit(max)).toBe(112_897_016);
    expect(musicBodyLimit(max)).toBeLessThan(fullest + 1.1 * 1024 * 1024);
    expect(musicBodyLimit(1024)).toBeLessThan(1.1 * 1024 * 1024);
  });
});
