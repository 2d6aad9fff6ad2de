import { applyRequestTransform, costPicos, fillPath, GatewayError, InvalidUsage, invalidField, type Metered, microsToUsd, type ModalityHandler, type ModelRequest, type ModelRoute, picosToMicros, reportedSeconds, reportedTokens, type RespondContext, type TokenCounts, type UpstreamRequest } from '../../src/sdk.js';
import { ACCEPTED_AUDIO, estimateSeconds, maxSeconds, sniffAudio, type AudioFormat } from './audio-format.js';
import { MultipartForm, type SpooledFile } from './multipart.js';
import { renderTranscript, TRANSCRIPT_FORMATS, type TranscriptFormat } from './transcript-format.js';
import { multipartUpload, rawUpload, uploadFilename, type UploadBody } from './upload.js';

export const TRANSCRIPTIONS_URL = '/v1/audio/transcriptions';

export interface TranscriptionRequest extends ModelRequest {
  form: MultipartForm;
  file: SpooledFile;
  format: AudioFormat;
  responseFormat: TranscriptFormat;
  language: string | undefined;
  temperature: number | undefined;
}

/** Validates the multipart form of `POST /v1/audio/transcriptions` (spec §4.6). Nothing is charged on failure. */
function parseTranscriptionRequest(body: unknown): TranscriptionRequest {
  if (!(body instanceof MultipartForm)) {
    throw invalidField('', `${TRANSCRIPTIONS_URL} takes a multipart/form-data body with a "file" part and a "model" field`);
  }
  const model = body.field('model');
  if (!model) throw invalidField('model', 'model is required');
  const responseFormat = body.field('response_format') ?? 'json';
  if (!(TRANSCRIPT_FORMATS as readonly string[]).includes(responseFormat)) {
    throw invalidField('response_format', `response_format must be one of ${TRANSCRIPT_FORMATS.join(', ')}`);
  }
  const language = body.field('language') || undefined;
  if (language !== undefined && !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/.test(language)) {
    throw invalidField('language', 'language must be an ISO-639-1 code such as "en"');
  }
  const rawTemperature = body.field('temperature');
  const temperature = rawTemperature === undefined || rawTemperature === '' ? undefined : Number(rawTemperature);
  if (temperature !== undefined && !(temperature >= 0 && temperature <= 1)) throw invalidField('temperature', 'temperature must be a number from 0 to 1');
  if (body.field('stream') === 'true') throw invalidField('stream', 'streamed transcriptions are not supported; omit stream');
  const file = body.file;
  if (!file) throw invalidField('file', 'file is required: send the audio as the "file" part of the form');
  if (file.size === 0) throw invalidField('file', 'file is empty');
  const format = sniffAudio(file.head);
  if (!format) throw invalidField('file', `file is not a supported audio file (${ACCEPTED_AUDIO})`);
  return {
    model, form: body, file, format, responseFormat: responseFormat as TranscriptFormat, language, temperature,
    prompt: body.field('prompt') || undefined,
  };
}

/** What the endpoint's YAML request transform sees (JSONata input). */
function transformInput(req: TranscriptionRequest, route: ModelRoute): Record<string, unknown> {
  return {
    model: route.model.upstreamId, language: req.language, prompt: req.prompt, response_format: req.responseFormat,
    temperature: req.temperature, filename: req.file.filename, mime_type: req.format.mime, bytes: req.file.size,
  };
}

/**
 * The upstream request, by the endpoint's `upload` setting: `multipart` re-sends the
 * form (the client's fields, or the transform's `body` object as fields) with the
 * file streamed from disk; `raw` sends the file bytes as the body, with everything
 * else in the path, query or headers from the transform.
 */
async function buildTranscriptionUpstream(req: TranscriptionRequest, route: ModelRoute): Promise<UpstreamRequest> {
  const built = await applyRequestTransform(route.endpoint.transforms.request, transformInput(req, route));
  const path = fillPath(route.endpoint.path, { model: route.model.upstreamId, ...built?.pathVars });
  const upload = route.endpoint.upload === 'raw' ? rawUpload(req.file, req.format.mime) : formUpload(req, route, built?.body);
  return {
    path, query: built?.query, contentType: upload.contentType, body: upload.open(),
    headers: { ...built?.headers, 'content-length': String(upload.length) },
  };
}

/** The form to re-send: the transform's `body` object as fields, else the client's fields with the provider's model id. */
function formUpload(req: TranscriptionRequest, route: ModelRoute, transformedBody: string | undefined): UploadBody {
  const upstreamModel = route.model.upstreamId;
  const fields: Array<readonly [string, string]> = transformedBody !== undefined
    ? Object.entries(JSON.parse(transformedBody) as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])
    : req.form.fields.map(([k, v]) => [k, k === 'model' ? upstreamModel : v]);
  const filename = uploadFilename(req.file.filename, req.format.name);
  return multipartUpload(fields, { ...req.file, field: 'file', filename, contentType: req.format.mime });
}

interface UpstreamTranscript {
  text: string;
  seconds: number | undefined;
  language: string | undefined;
  /** The parsed JSON reply of an OpenAI-format upstream, passed on with the gateway's cost. */
  json: Record<string, unknown> | undefined;
}


/** Text and duration: by the YAML `response` transform, or from OpenAI's own reply formats. */
async function readTranscript(body: string, req: TranscriptionRequest, route: ModelRoute): Promise<UpstreamTranscript | undefined> {
  const extract = route.endpoint.transforms.response;
  const isJson = extract !== undefined || req.responseFormat === 'json' || req.responseFormat === 'verbose_json';
  if (!isJson) return { text: body, seconds: undefined, language: undefined, json: undefined };
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (extract) {
    const out = await extract(json);
    if (typeof out.text !== 'string') return undefined;
    return { text: out.text, seconds: reportedSeconds(out.seconds, 'seconds'), language: typeof out.language === 'string' ? out.language : undefined, json: undefined };
  }
  if (typeof json.text !== 'string') return undefined;
  const usage = json.usage as { type?: unknown; seconds?: unknown } | undefined;
  const seconds = usage?.type === 'duration' ? reportedSeconds(usage.seconds, 'usage.seconds') : reportedSeconds(json.duration, 'duration');
  return { text: json.text, seconds, language: undefined, json };
}

/** The token counts of a token-metered transcription's `usage` (OpenAI's gpt-4o models), as the client receives them. */
function tokenUsage(usage: Record<string, unknown>): TokenCounts | undefined {
  if (usage.type !== 'tokens') return undefined;
  return { input: reportedTokens(usage.input_tokens, 'usage.input_tokens') ?? 0, output: reportedTokens(usage.output_tokens, 'usage.output_tokens') ?? 0, cachedInput: 0, reasoning: 0 };
}

async function respondTranscription(ctx: RespondContext<TranscriptionRequest>): Promise<Metered> {
  const { parsed, route, upstream, reply } = ctx;
  let got: UpstreamTranscript | undefined;
  try {
    got = await readTranscript(await upstream.body.text(), parsed, route);
  } catch (err) {
    if (err instanceof InvalidUsage) throw new GatewayError('upstream_error', [err.message]);
    throw err;
  }
  if (!got) throw new GatewayError('upstream_error', ['the upstream sent a malformed transcription response']);
  const seconds = got.seconds ?? estimateSeconds(parsed.file.head, parsed.file.size);
  const cost = costPicos(route.model, { audio_second: seconds });
  // Rounded once: the figure the client sees is the one charged.
  const costMicros = picosToMicros(cost);
  const usd = microsToUsd(costMicros);
  let usage: TokenCounts | undefined;
  if (route.endpoint.transforms.response) {
    const r = renderTranscript({ text: got.text, seconds, language: got.language ?? parsed.language }, parsed.responseFormat, usd);
    void reply.code(200).type(r.contentType).send(r.body);
  } else if (got.json) {
    const reported = got.json.usage !== null && typeof got.json.usage === 'object' ? { ...got.json.usage, cost: usd } : { type: 'duration', seconds: Math.ceil(seconds), cost: usd };
    try {
      usage = tokenUsage(reported);
    } catch (err) {
      if (err instanceof InvalidUsage) throw new GatewayError('upstream_error', [err.message]);
      throw err;
    }
    void reply.code(200).type('application/json').send(JSON.stringify({ ...got.json, usage: reported }));
  } else {
    const type = upstream.headers['content-type'];
    void reply.code(200).type(typeof type === 'string' ? type : 'text/plain; charset=utf-8').send(got.text);
  }
  return { costMicros, estimated: got.seconds === undefined, usage };
}

export const transcriptionHandler: ModalityHandler<TranscriptionRequest> = {
  modality: 'transcription',
  parse: (body) => parseTranscriptionRequest(body),
  maxCostPicos: (req, route) => costPicos(route.model, { audio_second: maxSeconds(req.file.head, req.file.size) }),
  buildUpstream: buildTranscriptionUpstream,
  respond: respondTranscription,
};
