import { invalidField, type ModelRequest } from '../../src/sdk.js';
import { decodeDataUrl, type ImageSource } from './images.js';

export const MAX_PROMPT_CHARS = 4096;
export const MAX_IMAGES = 10;
/** Room for the prompt, lyrics and JSON around the images. */
const TEXT_ROOM_BYTES = 1024 * 1024;
/** `data:image/jpeg;base64,`, quotes and a comma: the bytes around each image's base64. */
const DATA_URL_OVERHEAD = 32;

/**
 * The body limit of `POST /v1/music`: what the spec lets a request carry (§4.1: up to
 * 10 reference images of at most 8 MB each, sent inline) as base64 data URLs, plus
 * room for the text. 112,897,016 bytes (≈ 108 MiB) with the default 8 MiB images; a
 * smaller `image_fetch.max_bytes` lowers it.
 */
export function musicBodyLimit(maxImageBytes: number): number {
  return MAX_IMAGES * (4 * Math.ceil(maxImageBytes / 3) + DATA_URL_OVERHEAD) + TEXT_ROOM_BYTES;
}

export interface MusicRequest extends ModelRequest {
  prompt: string;
  instrumental: boolean;
  /** Ignored (undefined) when instrumental is true. */
  lyrics: string | undefined;
  responseFormat: 'mp3';
  images: ImageSource[];
}

const FIELDS = new Set(['model', 'prompt', 'response_format', 'instrumental', 'lyrics', 'reference_images']);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates `POST /v1/music` (spec §4.1). Data-URL images are decoded and checked here; https URLs are fetched later. */
export function parseMusicRequest(body: unknown, maxImageBytes: number): MusicRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const unknown = Object.keys(body).filter((k) => !FIELDS.has(k));
  if (unknown.length > 0) throw invalidField(unknown[0] ?? '', `Unknown field ${unknown.join(', ')}; accepted: ${[...FIELDS].join(', ')}`);
  const { model, prompt, response_format: format, instrumental, lyrics, reference_images: images } = body;
  if (typeof model !== 'string' || model.length === 0) throw invalidField('model', 'model is required and must be a music model id');
  if (typeof prompt !== 'string' || prompt.trim().length === 0) throw invalidField('prompt', 'prompt is required and must be a non-empty string');
  if ([...prompt].length > MAX_PROMPT_CHARS) throw invalidField('prompt', `prompt must be at most ${MAX_PROMPT_CHARS} characters`);
  if (format !== undefined && format !== 'mp3') throw invalidField('response_format', 'response_format must be "mp3" (the only format music models produce)');
  if (instrumental !== undefined && typeof instrumental !== 'boolean') throw invalidField('instrumental', 'instrumental must be a boolean');
  if (lyrics !== undefined && typeof lyrics !== 'string') throw invalidField('lyrics', 'lyrics must be a string');
  if (images !== undefined && !Array.isArray(images)) throw invalidField('reference_images', 'reference_images must be an array');
  const list = (images ?? []) as unknown[];
  if (list.length > MAX_IMAGES) throw invalidField('reference_images', `at most ${MAX_IMAGES} reference images are accepted`);
  return {
    model,
    prompt,
    instrumental: instrumental === true,
    lyrics: instrumental === true || lyrics === undefined || lyrics.trim() === '' ? undefined : lyrics,
    responseFormat: 'mp3',
    images: list.map((img, i) => imageSource(img, i, maxImageBytes)),
  };
}

function imageSource(img: unknown, i: number, maxBytes: number): ImageSource {
  const param = `reference_images[${i}]`;
  const url = typeof img === 'string' ? img : isObject(img) && typeof img.url === 'string' ? img.url : undefined;
  if (url === undefined) throw invalidField(param, `${param} must be a data URL or an https URL (a string, or {"url": …})`);
  if (url.startsWith('data:')) return decodeDataUrl(url, param, maxBytes);
  if (/^https?:\/\//i.test(url)) return { kind: 'url', url, param };
  throw invalidField(param, `${param} must be a data:image/… URL or an https:// URL`);
}
