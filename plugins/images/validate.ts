import { invalidField, type ModelRequest, type ModelRoute } from '../../src/sdk.js';

/** A validated `POST /v1/images/generations` request. */
export interface ImageRequest extends ModelRequest {
  /** The client's body, for an OpenAI-format upstream. */
  body: Record<string, unknown>;
  prompt: string;
  n: number;
  size: string | undefined;
  quality: string | undefined;
  /** What the client asked for; undefined means the gateway's default (b64_json unless hosting is on for a url-default model). */
  responseFormat: 'url' | 'b64_json' | undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw invalidField(field, `${field} must be a non-empty string`);
  return v;
}

/** Validates an OpenAI images request; every failure names its field (400). */
export function parseImageRequest(body: unknown): ImageRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model === '') throw invalidField('model', 'model is required (e.g. gpt-image-1, dall-e-3, imagen-4.0-generate-001)');
  if (typeof body.prompt !== 'string' || body.prompt.trim() === '') throw invalidField('prompt', 'prompt is required and must be a non-empty string');
  const n = body.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 10) throw invalidField('n', 'n must be an integer from 1 to 10');
  const format = body.response_format;
  if (format !== undefined && format !== null && format !== 'url' && format !== 'b64_json') throw invalidField('response_format', 'response_format must be url or b64_json');
  for (const f of ['style', 'user', 'background', 'output_format', 'moderation']) optionalString(body, f);
  return {
    model: body.model, prompt: body.prompt, body, n,
    size: optionalString(body, 'size'), quality: optionalString(body, 'quality'),
    responseFormat: format === 'url' || format === 'b64_json' ? format : undefined,
  };
}

/** A model priced per token (gpt-image-1) rather than per image. */
export const pricedPerToken = (route: ModelRoute): boolean => route.model.pricePicos.completion !== undefined;

/** The price variant a request asks for (`quality/size`), with OpenAI's defaults. */
export function variantOf(req: ImageRequest): string {
  return `${req.quality ?? 'standard'}/${req.size ?? '1024x1024'}`;
}

/** The request against the model's limits and price table: too many images, too long a prompt, an unpriced size or quality. */
export function checkImageRoute(req: ImageRequest, route: ModelRoute): void {
  const m = route.model;
  const max = Number(m.perRequestLimits.max_images ?? '10');
  if (req.n > max) throw invalidField('n', `${req.model} makes at most ${max} image${max === 1 ? '' : 's'} a request`);
  const chars = Number(m.perRequestLimits.prompt_characters ?? 'Infinity');
  if (req.prompt.length > chars) throw invalidField('prompt', `${req.model} takes a prompt of at most ${chars} characters`);
  const variants = Object.keys(m.pricingVariants);
  if (!pricedPerToken(route) && variants.length > 0 && !variants.includes(variantOf(req))) {
    throw invalidField(req.size && !variants.some((v) => v.endsWith(`/${req.size}`)) ? 'size' : 'quality',
      `${req.model} is offered as ${variants.join(', ')} (quality/size); ${variantOf(req)} is not one of them`);
  }
}
