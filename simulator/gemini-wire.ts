/**
 * Conventions shared by the Gemini text and Lyria music handlers: the error shape,
 * prompt accounting over `contents`, and the two ways a generation is delivered
 * (one JSON object, or a stream as SSE or as a streamed JSON array).
 */

import type { ServerResponse } from 'node:http';
import type { Directives } from './directives.js';
import { sendJson, streamPlan, writeEvents, type ErrorReply, type ErrorShape } from './http.js';
import { asArray, asObject, asString, type JsonObject } from './json.js';
import { promptTokens } from './reply.js';

const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export function geminiError(code: number, message: string, details?: readonly unknown[]): ErrorReply {
  const status = STATUS_NAMES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
  const error: JsonObject = { code, message, status };
  if (details !== undefined) error['details'] = details;
  return { status: code, body: { error } };
}

const DIRECTIVE_MESSAGES: Readonly<Record<number, string>> = {
  429: 'Resource has been exhausted (e.g. check quota). (simulated)',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting (simulated)',
  503: 'The model is overloaded. Please try again later. (simulated)',
};

export const geminiErrorShape: ErrorShape = (code) =>
  geminiError(code, DIRECTIVE_MESSAGES[code] ?? `Simulated error with status ${code}.`);

export interface PromptInfo {
  readonly tokens: number;
  /** inlineData parts whose mimeType is an image (Lyria reference images). */
  readonly images: number;
  readonly text: string;
}

/** Token estimate, image count and concatenated prompt text of a generateContent body. */
export function promptInfo(body: JsonObject): PromptInfo {
  const contents = asArray(body['contents']) ?? [];
  const system = asObject(body['systemInstruction']);
  const texts: string[] = [];
  let images = 0;
  let chars = 0;
  for (const content of system === undefined ? contents : [...contents, system]) {
    for (const part of asArray(asObject(content)?.['parts']) ?? []) {
      const p = asObject(part);
      const text = asString(p?.['text']);
      if (text !== undefined) {
        texts.push(text);
        chars += text.length;
      }
      const mime = asString(asObject(p?.['inlineData'])?.['mimeType']);
      if (mime?.startsWith('image/') === true) images++;
    }
  }
  return { tokens: promptTokens(chars, contents.length), images, text: texts.join('\n') };
}

/** usageMetadata; thinking tokens (`thoughtsTokenCount`) are apart from the candidates' and in the total. */
export function usageMetadata(prompt: number, candidates: number, thoughts = 0): JsonObject {
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
    totalTokenCount: prompt + candidates + thoughts,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
}

const SAFETY_RATINGS = [
  { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true },
  { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' },
] as const;

/** `[[sim:safety_block]]`: a 200 with promptFeedback.blockReason and no candidates. */
export function blockedResponse(model: string, responseId: string, prompt: number): JsonObject {
  return {
    promptFeedback: { blockReason: 'SAFETY', safetyRatings: SAFETY_RATINGS },
    usageMetadata: { promptTokenCount: prompt, totalTokenCount: prompt },
    modelVersion: model,
    responseId,
  };
}

/** `[[sim:safety_finish]]`: one candidate stopped for SAFETY with no content. */
export function safetyFinishResponse(model: string, responseId: string, prompt: number): JsonObject {
  return {
    candidates: [{ finishReason: 'SAFETY', index: 0, safetyRatings: SAFETY_RATINGS }],
    usageMetadata: usageMetadata(prompt, 0),
    modelVersion: model,
    responseId,
  };
}

export interface Delivery {
  readonly stream: boolean;
  /** `?alt=sse`; without it a stream is one JSON array sent incrementally. */
  readonly sse: boolean;
}

/**
 * Sends a generation: buffered → the single full `response`; streamed → `chunks`, as
 * `data:` events with CRLF separators (as Google's servers send them, which keeps
 * the gateway's SSE parser honest) or as a JSON array.
 */
export async function deliver(
  res: ServerResponse,
  d: Directives,
  how: Delivery,
  response: JsonObject,
  chunks: readonly JsonObject[],
): Promise<void> {
  if (!how.stream) {
    sendJson(res, 200, response);
    return;
  }
  const error = JSON.stringify(geminiErrorShape(503).body);
  if (how.sse) {
    const events = chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`);
    await writeEvents(res, events, streamPlan(d, 'text/event-stream', `data: ${error}\r\n\r\n`));
    return;
  }
  const events = chunks.map((c, i) => `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(c)}`);
  events.push(']');
  await writeEvents(res, events, streamPlan(d, 'application/json; charset=UTF-8', `,\r\n${error}]`));
}
