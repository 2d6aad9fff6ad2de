/** OpenAI audio routes: text-to-speech (MP3 bytes) and multipart transcriptions. */

import type { ServerResponse } from 'node:http';
import { framesForSeconds } from './mp3.js';
import { multipartBoundary, parseMultipart } from './multipart.js';
import { applyFaults, header, sendAudio, sendError, sendJson, sendRaw, type Handler } from './http.js';
import { asNumber, asString } from './json.js';
import { openaiAuth, openaiError, openaiErrorShape, openaiJsonPreamble, openaiModel } from './openai.js';
import { audioSecondsFromBytes, speechSeconds } from './reply.js';

/** Content types per `response_format`; every format gets the same MP3 bytes. */
const SPEECH_TYPES: Readonly<Record<string, string>> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export const TRANSCRIPT = 'Simulated transcript.';

function badRequest(message: string, param: string | null, code: string | null = null) {
  return openaiError(400, message, 'invalid_request_error', code, param);
}

export const handleSpeech: Handler = async (req, res, env) => {
  const pre = openaiJsonPreamble(req, res);
  if (pre === undefined) return;
  const input = asString(pre.body['input']);
  if (input === undefined || input === '') {
    sendError(res, badRequest("Missing required parameter: 'input'.", 'input', 'missing_required_parameter'));
    return;
  }
  if (input.length > 4096) {
    sendError(res, badRequest("Invalid 'input': string too long.", 'input', 'string_above_max_length'));
    return;
  }
  if (asString(pre.body['voice']) === undefined) {
    sendError(res, badRequest("Missing required parameter: 'voice'.", 'voice', 'missing_required_parameter'));
    return;
  }
  const format = asString(pre.body['response_format']) ?? 'mp3';
  const contentType = SPEECH_TYPES[format];
  if (contentType === undefined) {
    sendError(res, badRequest(`Invalid value: '${format}'.`, 'response_format', 'invalid_value'));
    return;
  }
  const seconds = speechSeconds(input.length, asNumber(pre.body['speed']) ?? 1);
  await sendAudio(res, req.directives, openaiErrorShape, contentType, () => env.mp3.bytes(framesForSeconds(seconds)));
};

const TRANSCRIPT_FORMATS = new Set(['json', 'text', 'srt', 'verbose_json', 'vtt']);

export const handleTranscription: Handler = async (req, res) => {
  if (!openaiAuth(req, res)) return;
  const boundary = multipartBoundary(header(req.headers, 'content-type'));
  const parts = boundary === undefined ? undefined : parseMultipart(req.body, boundary);
  if (parts === undefined) {
    sendError(res, badRequest('Could not parse multipart form data.', null));
    return;
  }
  const field = (name: string): string | undefined =>
    parts.find((p) => p.name === name && p.filename === undefined)?.data.toString('utf8');
  const file = parts.find((p) => p.name === 'file');
  if (file === undefined) {
    sendError(res, badRequest("Missing required parameter: 'file'.", 'file', 'missing_required_parameter'));
    return;
  }
  const model = openaiModel(res, field('model'));
  if (model === undefined) return;
  const format = field('response_format') ?? 'json';
  if (!TRANSCRIPT_FORMATS.has(format)) {
    sendError(res, badRequest(`Invalid value: '${format}'.`, 'response_format', 'invalid_value'));
    return;
  }
  if (await applyFaults(res, req.directives, openaiErrorShape, false)) return;
  const reported = req.directives.usage;
  sendTranscript(res, format, reported ?? audioSecondsFromBytes(file.data.length), model, field('language'), reported !== undefined);
};

/** whisper-1 bills by duration; the gpt-4o transcribe models report tokens. */
function transcriptionUsage(model: string, duration: number): Record<string, unknown> {
  if (!model.startsWith('gpt-')) return { type: 'duration', seconds: Math.max(1, Math.ceil(duration)) };
  const audioTokens = Math.max(1, Math.ceil(duration * 10));
  const outputTokens = 4;
  return {
    type: 'tokens',
    input_tokens: audioTokens,
    input_token_details: { text_tokens: 0, audio_tokens: audioTokens },
    output_tokens: outputTokens,
    total_tokens: audioTokens + outputTokens,
  };
}

function sendTranscript(
  res: ServerResponse,
  format: string,
  duration: number,
  model: string,
  language: string | undefined,
  verbatim = false,
): void {
  const end = Math.max(1, duration);
  const usage = verbatim ? { type: 'duration', seconds: duration } : transcriptionUsage(model, duration);
  if (format === 'json') {
    sendJson(res, 200, { text: TRANSCRIPT, usage });
  } else if (format === 'text') {
    sendRaw(res, 200, 'text/plain; charset=utf-8', `${TRANSCRIPT}\n`);
  } else if (format === 'srt') {
    sendRaw(res, 200, 'text/plain; charset=utf-8', `1\n00:00:00,000 --> ${timestamp(end, ',')}\n${TRANSCRIPT}\n\n`);
  } else if (format === 'vtt') {
    sendRaw(res, 200, 'text/plain; charset=utf-8', `WEBVTT\n\n00:00:00.000 --> ${timestamp(end, '.')}\n${TRANSCRIPT}\n\n`);
  } else {
    sendJson(res, 200, {
      task: 'transcribe',
      language: language ?? 'english',
      duration: Math.round(duration * 100) / 100,
      text: TRANSCRIPT,
      segments: [
        {
          id: 0,
          seek: 0,
          start: 0,
          end: Math.round(end * 100) / 100,
          text: ` ${TRANSCRIPT}`,
          tokens: [],
          temperature: 0,
          avg_logprob: -0.1,
          compression_ratio: 1,
          no_speech_prob: 0.01,
        },
      ],
      usage,
    });
  }
}

/** HH:MM:SS<sep>mmm as SRT (comma) and WebVTT (dot) want it. */
function timestamp(seconds: number, sep: string): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${pad(h)}:${pad(m)}:${pad(s)}${sep}${pad(ms % 1000, 3)}`;
}
