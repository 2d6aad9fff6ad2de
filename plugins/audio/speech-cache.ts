import { type CacheDef, captureBody, type Metered, type ModalityHandler, type ResponseCacheApi, serverCut } from '../../src/sdk.js';
import type { SpeechRequest } from './speech.js';

/*
 * Speech's part of the response cache (docs/cache.md): the same text, voice, format,
 * speed and instructions on the same model give the same audio, stored as its bytes with
 * its content type and replayed as the same stream of bytes.
 */

interface StoredSpeech {
  contentType: string;
  /** The audio, base64. */
  audio: string;
}

/** Audio bigger than this is not stored. */
const AUDIO_CAP = 4 * 1024 * 1024;

export const speechCache: CacheDef<SpeechRequest, StoredSpeech> = {
  request: (req) => ({ key: Object.fromEntries(Object.entries(req.body).filter(([k]) => k !== 'model' && k !== 'user')) }),
  async replay({ ex, openStream }, hit): Promise<Metered> {
    const charged = hit.price(hit.entry.costMicros);
    const out = openStream({ 'content-type': hit.entry.body.contentType });
    await out.write(Buffer.from(hit.entry.body.audio, 'base64'));
    if (!(await out.end())) return { costMicros: charged, errorCode: serverCut(ex)?.code ?? 'client_closed_request' };
    return { costMicros: charged };
  },
};

/** The speech handler whose complete replies are offered to the cache (read through a copy of the upstream's bytes). */
export function cachingSpeech(handler: ModalityHandler<SpeechRequest>, cache: ResponseCacheApi): ModalityHandler<SpeechRequest> {
  return {
    ...handler,
    async respond(ctx) {
      if (!cache.wants(ctx.ex)) return handler.respond(ctx);
      const captured = captureBody(ctx.upstream.body, AUDIO_CAP);
      const metered = await handler.respond({ ...ctx, upstream: { ...ctx.upstream, body: captured.body } });
      const bytes = captured.bytes();
      const type = ctx.upstream.headers['content-type'];
      if (bytes && bytes.length > 0 && ctx.ex.errorCode === undefined) {
        cache.offer<StoredSpeech>(ctx.ex, { contentType: typeof type === 'string' ? type : 'audio/mpeg', audio: bytes.toString('base64') });
      }
      return metered;
    },
  };
}
