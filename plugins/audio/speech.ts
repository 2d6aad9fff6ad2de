import { applyRequestTransform, costPicos, type Exchange, fillPath, GatewayError, invalidField, type Metered, type ModalityHandler, type ModelRequest, type ModelRoute, type RespondContext, serverCut, type UpstreamRequest } from '../../src/sdk.js';
import { isAudioContentType, looksLikeText } from './audio-format.js';

/** OpenAI's limit on `input`, which the gateway keeps for every speech model. */
const MAX_SPEECH_CHARACTERS = 4096;
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
function parseSpeechRequest(body: unknown): SpeechRequest {
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
  const built = await applyRequestTransform(route.endpoint.transforms.request, {
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
 * type. The first bytes are read before the reply starts: an upstream that breaks or
 * ends before any audio, or answers 200 with something that is not audio (a JSON or
 * text content type, or bytes that are text), is a 502, not charged. Billed per input
 * character: in full once the first bytes are out — the upstream generated the audio
 * for the whole text and bills it so — also when the client leaves early, and also
 * when the upstream breaks off mid-audio (the client sees the connection cut; the log
 * row says `upstream_error`).
 */
async function respondSpeech(ctx: RespondContext<SpeechRequest>): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const type = upstream.headers['content-type'];
  const contentType = typeof type === 'string' ? type : undefined;
  const chunks = upstream.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await firstAudio(ex, chunks, contentType, () => upstream.body.destroy());
  const cost = costPicos(route.model, { input_character: parsed.characters });
  const out = ctx.openStream({ 'content-type': contentType ?? 'audio/mpeg' });
  try {
    for (let chunk: Buffer | undefined = first; chunk !== undefined; chunk = await nextChunk(chunks)) {
      if (!(await out.write(chunk))) break;
    }
  } catch {
    if (!ex.abort.signal.aborted) {
      // The client already has a 200 and part of the audio: all that is left is to cut its connection.
      // Cut it here, not through the stream, so the reply counts as gone before the exchange is logged.
      reply.raw.destroy();
      return { costPicos: cost, errorCode: 'upstream_error' };
    }
  }
  // Billed in full whether or not the end reaches the client (above); a cut says why in the log.
  if (!(await out.end())) return { costPicos: cost, errorCode: serverCut(ex)?.code ?? 'client_closed_request' };
  return { costPicos: cost };
}

async function nextChunk(chunks: AsyncIterator<Buffer>): Promise<Buffer | undefined> {
  const next = await chunks.next();
  return next.done === true ? undefined : next.value;
}

/** The first bytes of an audio reply, or the 502 for a reply that broke, was empty, or is not audio. */
async function firstAudio(ex: Exchange, chunks: AsyncIterator<Buffer>, contentType: string | undefined, discard: () => void): Promise<Buffer> {
  let first: Buffer | undefined;
  try {
    first = await nextChunk(chunks);
  } catch (err) {
    if (ex.abort.signal.aborted) throw new GatewayError('client_closed_request');
    throw new GatewayError('upstream_error', [`the upstream audio broke before its first byte (${(err as Error).message}); not charged`]);
  }
  if (first === undefined || first.length === 0) throw new GatewayError('upstream_error', ['the upstream answered 200 without audio; not charged']);
  if (!isAudioContentType(contentType) || looksLikeText(first)) {
    discard();
    const snippet = first.toString('utf8', 0, Math.min(first.length, 200)).replace(/\s+/g, ' ').trim();
    throw new GatewayError('upstream_error', [`the upstream answered 200 with ${contentType ?? 'no content type'} instead of audio (${snippet}); not charged`]);
  }
  return first;
}

export const speechHandler: ModalityHandler<SpeechRequest> = {
  // The input to speak, for the guardrails (billed by its characters as the client sent it).
  texts: (req) => [{ get: () => req.input, set: (text) => { req.input = text; req.body.input = text; } }],
  modality: 'speech',
  parse: (body) => parseSpeechRequest(body),
  maxCostPicos: (req, route) => costPicos(route.model, { input_character: req.characters }),
  buildUpstream: buildSpeechUpstream,
  respond: respondSpeech,
};
