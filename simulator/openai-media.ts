/**
 * OpenAI image generations (`POST …/v1/images/generations`: gpt-image-1 billed per
 * token with `usage`, dall-e-* per image) and moderations (`POST …/v1/moderations`).
 * Images are real small PNGs; `[[sim:flagged]]` flags a moderation input.
 */

import { applyFaults, sendError, sendJson, type Handler } from './http.js';
import { asArray, asNumber, asObject, asString, parseJsonObject } from './json.js';
import { openaiAuth, openaiError, openaiErrorShape, openaiJsonPreamble } from './openai.js';
import { pngBytes } from './png.js';
import { textTokens } from './reply.js';

/** gpt-image-1 output tokens per image, by quality and size (OpenAI's published table). */
const GPT_IMAGE_TOKENS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
  medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
  high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
};

const SIZES: Readonly<Record<string, readonly string[]>> = {
  'gpt-image-1': ['1024x1024', '1024x1536', '1536x1024', 'auto'],
  'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'],
  'dall-e-2': ['256x256', '512x512', '1024x1024'],
};

export const handleImages: Handler = async (req, res, env) => {
  const pre = openaiJsonPreamble(req, res);
  if (pre === undefined) return;
  const prompt = asString(pre.body['prompt']);
  if (prompt === undefined || prompt === '') {
    sendError(res, openaiError(400, "Missing required parameter: 'prompt'.", 'invalid_request_error', 'missing_required_parameter', 'prompt'));
    return;
  }
  const gptImage = pre.model.startsWith('gpt-image');
  const size = asString(pre.body['size']) ?? (pre.model === 'dall-e-2' || gptImage ? '1024x1024' : '1024x1024');
  const sizes = SIZES[pre.model] ?? SIZES['dall-e-2'] ?? [];
  if (!sizes.includes(size)) {
    sendError(res, openaiError(400, `Invalid size '${size}'. Supported sizes are ${sizes.join(', ')}.`, 'invalid_request_error', 'invalid_value', 'size'));
    return;
  }
  const n = Math.max(1, Math.floor(asNumber(pre.body['n']) ?? 1));
  if (pre.model === 'dall-e-3' && n > 1) {
    sendError(res, openaiError(400, "Invalid 'n': dall-e-3 only supports n=1.", 'invalid_request_error', 'invalid_value', 'n'));
    return;
  }
  if (gptImage && pre.body['response_format'] !== undefined) {
    sendError(res, openaiError(400, "Unknown parameter: 'response_format'.", 'invalid_request_error', 'unknown_parameter', 'response_format'));
    return;
  }
  if (await applyFaults(res, req.directives, openaiErrorShape, false)) return;
  const id = env.nextId();
  const b64 = (i: number): string => pngBytes(`${prompt}#${i}#${id}`).toString('base64');
  const url = pre.body['response_format'] === 'url';
  const data = Array.from({ length: n }, (_, i) => (url ? { url: `https://images.simulator.invalid/${id}-${i}.png` } : { b64_json: b64(i), ...(pre.model === 'dall-e-3' ? { revised_prompt: prompt } : {}) }));
  if (!gptImage) {
    sendJson(res, 200, { created: Math.floor(Date.now() / 1000), data });
    return;
  }
  const quality = asString(pre.body['quality']) ?? 'auto';
  const perImage = GPT_IMAGE_TOKENS[quality === 'auto' ? 'medium' : quality]?.[size === 'auto' ? '1024x1024' : size] ?? 1056;
  const input = textTokens(prompt);
  sendJson(res, 200, {
    created: Math.floor(Date.now() / 1000), data, background: 'opaque', output_format: 'png', quality, size,
    usage: { total_tokens: input + n * perImage, input_tokens: input, output_tokens: n * perImage, input_tokens_details: { text_tokens: input, image_tokens: 0 } },
  });
};

const CATEGORIES = [
  'harassment', 'harassment/threatening', 'hate', 'hate/threatening', 'illicit', 'illicit/violent', 'self-harm',
  'self-harm/instructions', 'self-harm/intent', 'sexual', 'sexual/minors', 'violence', 'violence/graphic',
] as const;

/** Moderation results, one per input; `[[sim:flagged]]` flags every input as violence. */
export const handleModerations: Handler = async (req, res, env) => {
  if (!openaiAuth(req, res)) return;
  const body = parseJsonObject(req.body);
  if (body === undefined) {
    sendError(res, openaiError(400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null));
    return;
  }
  // The model is optional here, as OpenAI's: omni-moderation-latest by default.
  const pre = { body, model: asString(body['model']) ?? 'omni-moderation-latest' };
  const raw = pre.body['input'];
  const inputs = typeof raw === 'string' ? [raw] : asArray(raw);
  if (inputs === undefined || inputs.length === 0) {
    sendError(res, openaiError(400, "Missing required parameter: 'input'.", 'invalid_request_error', 'missing_required_parameter', 'input'));
    return;
  }
  if (await applyFaults(res, req.directives, openaiErrorShape, false)) return;
  const flagged = req.directives.flagged;
  // Multi-modal input (text and image parts) is one result; a list of strings is one result each.
  const count = inputs.every((x) => typeof x === 'string') ? inputs.length : 1;
  const types = inputs.some((x) => asObject(x)?.['type'] === 'image_url') ? ['text', 'image'] : ['text'];
  const result = {
    flagged,
    categories: Object.fromEntries(CATEGORIES.map((c) => [c, flagged && c === 'violence'])),
    category_scores: Object.fromEntries(CATEGORIES.map((c) => [c, flagged && c === 'violence' ? 0.97 : 0.0001])),
    category_applied_input_types: Object.fromEntries(CATEGORIES.map((c) => [c, types])),
  };
  sendJson(res, 200, { id: `modr-sim${env.nextId()}`, model: pre.model, results: Array.from({ length: count }, () => result) });
};
