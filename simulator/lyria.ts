/**
 * Lyria 3 music through generateContent: one candidate with a timestamped
 * lyrics/structure text part and an `audio/mpeg` inlineData part holding a real MP3
 * (clip ≈ 30 s, pro ≈ 150 s, or `[[sim:size_mb=N]]` for N×10^6 bytes).
 */

import type { ServerResponse } from 'node:http';
import { framesForBytes, framesForSeconds, secondsForFrames } from './mp3.js';
import { applyFaults, sendError, type SimEnv, type SimRequest } from './http.js';
import type { JsonObject } from './json.js';
import { blockedResponse, deliver, geminiError, geminiErrorShape, promptInfo, safetyFinishResponse, usageMetadata, type Delivery } from './gemini-wire.js';
import { textTokens } from './reply.js';

const CLIP_SECONDS = 30;
const PRO_SECONDS = 150;

export function isLyriaModel(model: string): boolean {
  return model.startsWith('lyria-3-');
}

function isClip(model: string): boolean {
  return model.startsWith('lyria-3-clip');
}

export interface LyriaCall {
  readonly model: string;
  readonly body: JsonObject;
  readonly how: Delivery;
}

export async function handleLyria(req: SimRequest, res: ServerResponse, env: SimEnv, call: LyriaCall): Promise<void> {
  const d = req.directives;
  const info = promptInfo(call.body);
  if (isClip(call.model) && info.images > 0) {
    sendError(res, geminiError(400, `Image input is not supported by ${call.model}.`));
    return;
  }
  if (await applyFaults(res, d, geminiErrorShape, call.how.stream)) return;
  const responseId = `sim${env.nextId()}`;
  if (d.safetyBlock || d.safetyFinish) {
    const only = d.safetyBlock
      ? blockedResponse(call.model, responseId, info.tokens)
      : safetyFinishResponse(call.model, responseId, info.tokens);
    await deliver(res, d, call.how, only, [only]);
    return;
  }
  const frames =
    d.sizeMb !== undefined
      ? framesForBytes(d.sizeMb * 1_000_000)
      : framesForSeconds(isClip(call.model) ? CLIP_SECONDS : PRO_SECONDS);
  const instrumental = /\binstrumental\b/i.test(info.text);
  // Like Lyria, sing the lyrics given in a `Lyrics:` block instead of inventing them.
  const given = /\n\nLyrics:\n([\s\S]*)$/.exec(info.text)?.[1];
  const text = lyricsText(secondsForFrames(frames), info.images, instrumental) + (given && !instrumental ? `\n(sung lyrics)\n${given}` : '');
  const parts: JsonObject[] = [{ text }];
  // text_only mimics the real "200 without audio" answer the gateway must reject.
  if (!d.textOnly) parts.push({ inlineData: { mimeType: 'audio/mpeg', data: env.mp3.base64(frames) } });
  const response: JsonObject = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: usageMetadata(info.tokens, textTokens(text)),
    modelVersion: call.model,
    responseId,
  };
  await deliver(res, d, call.how, response, [response]);
}

const SECTIONS: readonly (readonly [number, string, string])[] = [
  [0, 'intro', ''],
  [0.1, 'verse', 'Simulated lyrics drift across a quiet line'],
  [0.3, 'chorus', 'Sing the simulated chorus one more time'],
  [0.5, 'verse', 'Second verse, the same as the first'],
  [0.7, 'chorus', 'Sing the simulated chorus one more time'],
  [0.9, 'outro', ''],
];

/** Timestamped structure markers (`[12.5:] <verse>`) with lyric lines unless instrumental. */
function lyricsText(seconds: number, images: number, instrumental: boolean): string {
  const lines: string[] = [];
  for (const [at, label, lyric] of SECTIONS) {
    lines.push(`[${(at * seconds).toFixed(1)}:] <${label}>`);
    if (!instrumental && lyric !== '') lines.push(lyric);
  }
  if (images > 0) lines.push(`(inspired by ${images} reference image${images === 1 ? '' : 's'})`);
  return lines.join('\n');
}
