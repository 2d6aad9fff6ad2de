import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { costPicos, elapsedMs, fillPath, invalidField, type Metered, type ModalityHandler, type ModelRequest, type ModelRoute, type RespondContext, type UpstreamRequest } from '../../src/sdk.js';
import { applyRequestTransform } from './transform-request.js';

/** OpenAI's limit on `input`, which the gateway keeps for every speech model. */
export const MAX_SPEECH_CHARACTERS = 4096;
const FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];

export interface SpeechRequest extends ModelRequest {
  /** The client's body, passed on as-is to OpenAI-format upstreams (model replaced). */
  body: Record<string, unknown>;
  input: string;
  voice: string;
  /** Unicode characters of `input`: what speech is priced by. */
  characters: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates an OpenAI speech request (spec §4.6); nothing is charged on failure. */
export function parseSpeechRequest(body: unknown): SpeechRequest {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const { model, input, voice, response_format: format, speed, instructions, stream_format: streamFormat } = body;
  if (typeof model !== 'string' || model.length === 0) throw invalidField('model', 'model is required and must be a non-empty string');
  if (typeof input !== 'string' || input.trim().length === 0) throw invalidField('input', 'input is required and must be a non-empty string');
  const characters = [...input].length;
  if (characters > MAX_SPEECH_CHARACTERS) throw invalidField('input', `input is ${characters} characters; the maximum is ${MAX_SPEECH_CHARACTERS}`);
  const voiceId = isObject(voice) ? voice.id : voice;
  if (typeof voiceId !== 'string' || voiceId.length === 0) throw invalidField('voice', 'voice is required: a voice name or id');
  if (format !== undefined && format !== null && !FORMATS.includes(format as string)) {
    throw invalidField('response_format', `response_format must be one of ${FORMATS.join(', ')}`);
  }
  if (speed !== undefined && speed !== null && (typeof speed !== 'number' || !(speed >= 0.25 && speed <= 4))) {
    throw invalidField('speed', 'speed must be a number from 0.25 to 4');
  }
  if (instructions !== undefined && instructions !== null && typeof instructions !== 'string') throw invalidField('instructions', 'instructions must be a string');
  if (streamFormat !== undefined && streamFormat !== null && streamFormat !== 'audio') {
    throw invalidField('stream_format', 'only stream_format "audio" is supported: the audio bytes are streamed as they arrive');
  }
  return { model, body, input, voice: voiceId, characters, prompt: input };
}

/**
 * The upstream request: from the endpoint's YAML transform (ElevenLabs: voice in the
 * path, output_format in the query, its own body), or the client's OpenAI body.
 */
async function buildSpeechUpstream(req: SpeechRequest, route: ModelRoute): Promise<UpstreamRequest> {
  const b = req.body;
  const built = await applyRequestTransform(route, {
    model: route.model.upstreamId, input: req.input, voice: req.voice, response_format: b.response_format ?? undefined,
    speed: b.speed ?? undefined, instructions: b.instructions ?? undefined,
  });
  const vars = { model: route.model.upstreamId, voice: req.voice, ...built?.pathVars };
  return {
    path: fillPath(route.endpoint.path, vars),
    query: built?.query,
    headers: built?.headers,
    body: built ? built.body : JSON.stringify({ ...b, model: route.model.upstreamId }),
    contentType: 'application/json',
  };
}

/**
 * Streams the upstream's audio bytes to the client as they arrive, with its content
 * type. Billed per input character: in full once the upstream has sent everything,
 * also when the client leaves early (the upstream voiced the whole text); nothing
 * when the upstream breaks off, which the client sees as a cut connection.
 */
async function respondSpeech(ctx: RespondContext<SpeechRequest>): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const type = upstream.headers['content-type'];
  const out = new PassThrough();
  void reply.code(200).header('content-type', typeof type === 'string' ? type : 'audio/mpeg').send(out);
  let broke = false;
  try {
    for await (const chunk of upstream.body) {
      if (ex.ttfbMs === undefined) ex.ttfbMs = elapsedMs(ex);
      if (ex.abort.signal.aborted) break;
      if (!out.write(chunk as Buffer)) await Promise.race([once(out, 'drain'), once(ex.abort.signal, 'abort')]);
    }
  } catch {
    broke = !ex.abort.signal.aborted;
  }
  if (broke) {
    ex.errorCode = 'upstream_error';
    out.destroy(new Error('the upstream audio stream broke'));
    return { costPicos: 0n };
  }
  out.end();
  return { costPicos: costPicos(route.model, { input_character: parsed.characters }) };
}

export const speechHandler: ModalityHandler<SpeechRequest> = {
  modality: 'speech',
  parse: (body) => parseSpeechRequest(body),
  maxCostPicos: (req, route) => costPicos(route.model, { input_character: req.characters }),
  buildUpstream: buildSpeechUpstream,
  respond: respondSpeech,
};
