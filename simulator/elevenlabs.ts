/** ElevenLabs text-to-speech: `POST …/v1/text-to-speech/{voice_id}[/stream]` → MP3 bytes. */

import { framesForSeconds } from './mp3.js';
import { header, isRejectedKey, sendAudio, sendError, type ErrorReply, type ErrorShape, type Handler } from './http.js';
import { asString, parseJsonObject } from './json.js';
import { speechSeconds } from './reply.js';

function detail(status: number, code: string, message: string): ErrorReply {
  return { status, body: { detail: { status: code, message } } };
}

const elevenlabsErrorShape: ErrorShape = (status) => {
  if (status === 429) return detail(429, 'too_many_concurrent_requests', 'Too many concurrent requests (simulated).');
  if (status === 401) return detail(401, 'invalid_api_key', 'Invalid API key');
  if (status >= 500) return detail(status, 'internal_server_error', 'Internal server error (simulated).');
  return detail(status, 'simulated_error', `Simulated error with status ${status}.`);
};

/** The voice id segment after `/text-to-speech/`, or undefined. */
function voiceIdOf(path: string): string | undefined {
  const marker = '/text-to-speech/';
  const at = path.indexOf(marker);
  if (at < 0) return undefined;
  const voice = path.slice(at + marker.length).split('/')[0];
  return voice === undefined || voice === '' ? undefined : decodeURIComponent(voice);
}

/** Content types of the `output_format` families (codec_samplerate[_bitrate]); mp3 by default. */
const OUTPUT_TYPES: Readonly<Record<string, string>> = {
  mp3: 'audio/mpeg', pcm: 'audio/pcm', opus: 'audio/opus', wav: 'audio/wav', ulaw: 'audio/basic', alaw: 'audio/alaw',
};

export const handleTextToSpeech: Handler = async (req, res, env) => {
  const key = header(req.headers, 'xi-api-key');
  if (key === undefined || isRejectedKey(key)) {
    sendError(res, detail(401, 'invalid_api_key', 'Invalid API key'));
    return;
  }
  const voice = voiceIdOf(req.path);
  if (voice === undefined || voice.startsWith('unknown')) {
    sendError(res, detail(404, 'voice_not_found', `A voice with the voice_id ${voice ?? ''} was not found.`));
    return;
  }
  const text = asString(parseJsonObject(req.body)?.['text']);
  if (text === undefined || text === '') {
    // ElevenLabs validates bodies with FastAPI, so a missing field is a 422 list.
    sendError(res, {
      status: 422,
      body: { detail: [{ type: 'missing', loc: ['body', 'text'], msg: 'Field required', input: null }] },
    });
    return;
  }
  const outputFormat = req.query.get('output_format') ?? 'mp3_44100_128';
  const contentType = OUTPUT_TYPES[outputFormat.split('_')[0] ?? ''];
  if (contentType === undefined) {
    sendError(res, detail(400, 'invalid_output_format', `Invalid output_format ${outputFormat}.`));
    return;
  }
  // Every format carries the same MP3 bytes; only the declared type follows output_format.
  const audio = (): Buffer => env.mp3.bytes(framesForSeconds(speechSeconds(text.length)));
  await sendAudio(res, req.directives, elevenlabsErrorShape, contentType, audio, { 'request-id': `sim${env.nextId()}` });
};
