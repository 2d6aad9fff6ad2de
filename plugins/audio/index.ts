import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EndpointDef, exchangeSlot, GatewayError, type GatewayPlugin, settingsBlock } from '../../src/sdk.js';
import { type MultipartForm, spoolMultipart } from './multipart.js';
import { speechHandler } from './speech.js';
import { cachingSpeech, speechCache } from './speech-cache.js';
import { TRANSCRIPTIONS_URL, transcriptionHandler } from './transcription.js';

/** OpenAI's upload limit for transcriptions, kept for every speech-to-text model. */
const MAX_AUDIO_BYTES = 25 * 1024 * 1024;
/** Room for the text fields and multipart framing around the file. */
const FORM_OVERHEAD_BYTES = 256 * 1024;

function checkTranscriptionEndpoint(e: EndpointDef): string | undefined {
  if (e.upload === 'raw' && !e.transforms.response) {
    return 'an endpoint with upload: raw does not answer in OpenAI\'s format: add a response transform with at least `text` (and `seconds`)';
  }
  return undefined;
}

/**
 * Text-to-speech (`POST /v1/audio/speech`) and speech-to-text
 * (`POST /v1/audio/transcriptions`, multipart) in OpenAI's format, spec §4.6.
 * Uploads are spooled to a temp folder of this gateway and removed when the request
 * ends, whatever its outcome.
 */
export const audioPlugin: GatewayPlugin = {
  name: 'audio',
  settingsSchema: settingsBlock({
    upload_dir: { type: 'string', minLength: 1, description: 'Where uploads are spooled (a private folder is made inside); the system temp folder by default.' },
  }),
  modalities: {
    speech: { requiredPricing: ['input_character'], dialects: [] },
    transcription: { requiredPricing: ['audio_second'], dialects: [], checkEndpoint: checkTranscriptionEndpoint },
  },
  register(api) {
    const settings = (api.settings ?? {}) as { upload_dir?: string };
    if (settings.upload_dir !== undefined) {
      try {
        accessSync(settings.upload_dir, constants.W_OK);
      } catch {
        throw new Error(`settings.audio.upload_dir: ${settings.upload_dir} is not a writable folder`);
      }
    }
    // Made at the first upload, so a gateway that never takes one leaves nothing behind.
    let spool: Promise<string> | undefined;
    const spoolDir = (): Promise<string> => (spool ??= mkdtemp(join(settings.upload_dir ?? tmpdir(), 'tollgate-uploads-')));
    api.onClose(async () => {
      if (spool) await rm(await spool, { recursive: true, force: true });
    });
    // The request's spooled upload: this plugin's own state on the exchange, disposed of when the request ends.
    const uploads = exchangeSlot<MultipartForm>('audio.upload');
    api.bodyParser('multipart/form-data', async (request, payload) => {
      if (request.routeOptions.url !== TRANSCRIPTIONS_URL) {
        // Only the transcription route takes forms; elsewhere the body is left unread.
        if (request.routeOptions.url === undefined) return undefined;
        throw new GatewayError('unsupported_media_type', [String(request.headers['content-type'])]);
      }
      if (Number(request.headers['content-length']) > MAX_AUDIO_BYTES + FORM_OVERHEAD_BYTES) throw new GatewayError('body_too_large', [MAX_AUDIO_BYTES]);
      const form = await spoolMultipart(payload, request.headers, { dir: await spoolDir(), fileField: 'file', maxFileBytes: MAX_AUDIO_BYTES, maxFieldBytes: 64 * 1024, maxFields: 32 });
      const ex = request.exchange;
      uploads.set(ex, form);
      // post-billing runs when the reply is sent; a client that leaves aborts the exchange instead.
      ex.abort.signal.addEventListener('abort', () => void form.dispose(), { once: true });
      return form;
    });
    // Only a transcription has an upload: other requests answer at once (nothing to await).
    api.hook('post-billing', (ex) => {
      const form = uploads.get(ex);
      if (!form) return;
      return form.dispose().then(() => uploads.delete(ex));
    });
    api.modelRoute({ method: 'POST', url: '/v1/audio/speech', handler: api.cache.cached(cachingSpeech(speechHandler, api.cache), speechCache) });
    api.modelRoute({ method: 'POST', url: TRANSCRIPTIONS_URL, bodyLimit: MAX_AUDIO_BYTES + FORM_OVERHEAD_BYTES, handler: transcriptionHandler });
  },
};
